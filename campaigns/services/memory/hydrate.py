"""The World Bible hydrator (SPEC §5.5) and the term definer, as services for the tasks.

Rules, in the order they apply to one turn T with audience V (T's visibility):

- Monologues, unreviewed output (``needs_review``), system notes (a failed step's
  "PermanentLLMError", a skipped human) and the table's own speakers (TABLE, ALL, OOC…)
  are never lore sources; out-of-character asides inside a turn are cut out.
- T's observations (`context_engine.memory.observe`: names, coined compounds, rare and
  coined phrases, naming patterns, category cues; ``npc:/item:/location:/faction:`` tags
  mark a name as introduced) are added once to the running `VocabularyStat` rows of
  T's visibility. A term earns an entry for V when the rows every reader of V may read,
  taken together, hold enough evidence (`observe.admits`: two mentions, a capitalised use
  mid-sentence for a lone word, a naming pattern or a name's form in the DM's narration
  for one; a lowercase phrase counts distinct contexts, so a speaker's stock line said
  again is no new use, and two everyday words need a mark first). Its sources are
  those rows' turns (plus T), so V is the intersection of its sources' audiences (§4);
  its offline definition is the first-use sentence among them. Nothing a member of V
  cannot read is ever used.
- Near-duplicates merge: same `merge_key` ("the Geometers" = "Geometer"), or, within the
  same audience, one key's words appearing as a run in exactly one other entry's key
  ("Maelis" → "Archivist Maelis Orrow").
- An entry for a *broader* audience that already covers V (public, or a superset)
  absorbs the candidate: no narrower duplicate is made. A rejected entry stays rejected.
- Entries are created ``proposed``; locked, rejected and DM-made entries are never
  touched by a task. Every change writes a `LoreRevision` with actor ``task:hydrate``
  (``task:define`` for model definitions).
- Invalidation: a turn tagged ``dead:NAME``, ``gone:NAME``, ``destroyed:NAME``,
  ``lost:NAME`` or ``invalid:NAME`` sets ``invalid_from_round`` to its round on the
  matching extracted entries whose readers can all read that turn (a GM note cannot
  quietly change what players see). Nothing is deleted; the DM can also set or clear
  ``invalid_from_round`` with `lore_update`.

Incremental and idempotent: the experiment's `HydrationCursor` says which turns are in
the statistics; a batch locks it, reads only the turns after it (at most
``BABEL_HYDRATE_BATCH_TURNS``), and moves it. A rerun or a redelivered task finds nothing new.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from campaigns.models import Experiment, HydrationCursor, LoreEntry, LoreRevision, Turn
from campaigns.reads.adapters import turn_view
from campaigns.reads.selectors import OMNISCIENT, dm_roles, turns_visible_to
from campaigns.services.dispatch import send_on_commit
from campaigns.services.memory.audiences import digest_turns
from campaigns.services.memory.backends import (
    definer_client,
    definer_configured,
    judge_calls,
    model_down,
    scaled_sleep,
)
from campaigns.services.memory.batch import HYDRATE_ACTOR, INVALIDATING_TAGS, Batch
from campaigns.services.usage import worker_usage
from context_engine.llm import is_offline
from context_engine.memory import define_from_sources
from context_engine.visibility import parse_stored_visibility

log = logging.getLogger(__name__)

DEFINE_ACTOR = "task:define"
__all__ = [
    "HYDRATE_ACTOR",
    "INVALIDATING_TAGS",
    "hydrate_batch",
    "hydrate_experiment",
    "hydrate_turn",
]


@dataclass
class HydrateReport:
    created: list[int] = field(default_factory=list)
    updated: list[int] = field(default_factory=list)
    invalidated: list[int] = field(default_factory=list)
    hydrated_to: int = 0
    turns: int = 0
    done: bool = True

    def as_dict(self) -> dict[str, list[int]]:
        return {"created": self.created, "updated": self.updated, "invalidated": self.invalidated}

    def merge(self, other: HydrateReport) -> None:
        self.created += other.created
        self.updated += [pk for pk in other.updated if pk not in self.updated]
        self.invalidated += [pk for pk in other.invalidated if pk not in self.invalidated]
        self.hydrated_to = max(self.hydrated_to, other.hydrated_to)
        self.turns += other.turns
        self.done = other.done


def hydrate_batch(
    *, experiment: Experiment, up_to_seq: int | None = None, limit: int | None = None
) -> HydrateReport:
    """Add the next turns after the cursor (at most ``limit``, up to ``up_to_seq``) to the
    statistics and the World Bible, in one transaction. ``done`` says nothing is left."""
    report = HydrateReport()
    limit = limit or int(settings.BABEL_HYDRATE_BATCH_TURNS)
    dms = dm_roles(experiment=experiment)
    roles = sorted(experiment.participants.values_list("role", flat=True))
    with transaction.atomic():
        cursor, _ = HydrationCursor.objects.select_for_update().get_or_create(experiment=experiment)
        # System turns are the relay's and the app's own notes (a failed step, a skipped
        # human, a reveal): about the table, never the story, so never lore.
        rows = digest_turns(
            turns_visible_to(experiment=experiment, viewer=OMNISCIENT).filter(seq__gt=cursor.seq)
        ).exclude(kind=Turn.Kind.SYSTEM)
        if up_to_seq is not None:
            rows = rows.filter(seq__lte=up_to_seq)
        turns = [
            turn_view(t, dms)
            for t in rows.order_by("seq").only(
                "id",
                "seq",
                "round",
                "speaker",
                "kind",
                "content",
                "visibility",
                "tags",
                "hinge",
                "tokens",
            )[: limit + 1]
        ]
        report.done = len(turns) <= limit
        turns = turns[:limit]
        report.hydrated_to = cursor.seq
        if not turns:
            if up_to_seq is not None and up_to_seq > cursor.seq:
                cursor.seq = up_to_seq  # only ineligible turns (monologues…) in between
                cursor.save(update_fields=["seq", "updated_at"])
                report.hydrated_to = up_to_seq
            return report
        batch = Batch(experiment, roles=roles, dms=dms)
        known = len(batch.known_phrases)
        observed = [batch.observe(turn) for turn in turns]
        batch.load_stats(o.key for obs in observed for o in obs)  # one query, not one a turn
        for turn, observations in zip(turns, observed, strict=True):
            if len(batch.known_phrases) != known:  # a coined phrase was marked meanwhile
                observations = None  # re-observe: its plain uses count from now on
            batch.add(turn, observations)
        batch.flush()
        last = turns[-1].seq
        if report.done and up_to_seq is not None:
            last = max(last, up_to_seq)
        cursor.seq = last
        cursor.save(update_fields=["seq", "updated_at"])
        report.hydrated_to = last
        report.turns = len(turns)
        report.created = [s.pk for s in batch.created]
        report.updated = [s.pk for s in batch.updated if s.pk not in report.created]
        report.invalidated = [s.pk for s in batch.invalidated if s.pk is not None]
        if report.created and definer_configured(experiment):
            for pk in report.created:
                send_on_commit("define_term", pk)
    return report


def hydrate_turn(*, turn: Turn) -> dict[str, list[int]]:
    """Hydrate the World Bible up to this turn (and any earlier turn not yet in).

    Turn tasks can arrive out of order: the first to run takes every turn up to its own,
    the later ones find them done. A long backlog (an import) is left, past one batch,
    to a follow-up task, so each task stays inside its time limit.
    """
    report = hydrate_batch(experiment=turn.experiment, up_to_seq=turn.seq)
    if not report.done:
        send_on_commit("hydrate_turn", turn.pk)
    return report.as_dict()


def hydrate_experiment(
    *, experiment: Experiment, max_batches: int | None = None
) -> dict[str, list[int]]:
    """Hydrate every turn not yet in, batch by batch (catch-up for imported logs)."""
    total = HydrateReport()
    batches = 0
    while max_batches is None or batches < max_batches:
        report = hydrate_batch(experiment=experiment)
        total.merge(report)
        batches += 1
        if report.done:
            break
    return total.as_dict()


def define_term(*, entry: LoreEntry) -> str | None:
    """Replace an extracted entry's first-use sentence with the model's definition.

    Only from sources every reader of the entry may read. Never for locked, rejected,
    DM-made or human-edited entries; claimed by a conditional UPDATE so a DM correction
    made meanwhile wins. Returns the new definition, or None when nothing changed.
    """
    if entry.locked or entry.origin == LoreEntry.Origin.DM:
        return None
    if entry.status == LoreEntry.Status.REJECTED:
        return None
    if entry.revisions.filter(actor__in=[DEFINE_ACTOR, "task:vet"]).exists():
        return None  # already defined by a model: a rerun adds nothing
    if entry.revisions.filter(actor__startswith="user:").exists():
        return None  # a person has taken this entry over
    experiment = entry.experiment
    client = definer_client(experiment)
    if is_offline(client) or model_down(client):
        return None
    dms = dm_roles(experiment=experiment)
    audience = parse_stored_visibility(entry.audience, dms)
    sources = [
        turn_view(turn, dms) for turn in digest_turns(entry.source_turns.all()).order_by("seq")
    ]
    with worker_usage(experiment=experiment, worker="define") as calls:
        defined = define_from_sources(
            entry.term,
            sources,
            client=client,
            audience=audience,
            category=entry.category,
            sleep=scaled_sleep,
        )
    judge_calls(client, calls)  # down only when the model could not be reached
    if defined is None or defined.method != "llm" or not defined.definition:
        return None
    if defined.definition == entry.definition:
        return None
    claimed = (
        LoreEntry.objects.filter(
            pk=entry.pk,
            definition=entry.definition,
            locked=False,
            origin=LoreEntry.Origin.EXTRACTED,
        )
        .exclude(status=LoreEntry.Status.REJECTED)
        .update(definition=defined.definition, updated_at=timezone.now())
    )
    if not claimed:
        return None
    LoreRevision.objects.create(
        entry_id=entry.pk,
        actor=DEFINE_ACTOR,
        changes={
            "definition": [entry.definition, defined.definition],
            "model": [None, getattr(client, "model", "")],
        },
    )
    return defined.definition
