"""The World Bible hydrator (SPEC §5.5) and the term definer, as services for the tasks.

Rules, in the order they apply to one turn T with audience V (T's visibility):

- Monologues and unreviewed output (``needs_review``) are never lore sources.
- Candidates: `extract_candidates` on T (role names ignored), ``npc:/item:/location:/
  faction:`` tags whose name T mentions, and `recurring_phrases` across the turns up to
  T that every reader of V may read, kept when T mentions them.
- The entry for a candidate has audience V exactly: its sources are T and the earlier
  turns readable by all of V that mention it, so V is the intersection of its sources'
  audiences (§4), and its offline definition is the first-use sentence among those
  sources (`define_from_sources`). Nothing a member of V cannot read is ever used.
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

Idempotent: a turn already among an entry's sources changes nothing, so a rerun (or a
redelivered task) writes no row.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from django.db import IntegrityError, transaction
from django.utils import timezone

from campaigns.adapters import turn_view
from campaigns.models import Experiment, LoreEntry, LoreRevision, Turn
from campaigns.selectors import OMNISCIENT, dm_roles, turns_visible_to
from campaigns.services.memory.audiences import digest_turns
from campaigns.services.memory.backends import (
    definer_client,
    mark_down,
    mark_up,
    model_down,
    scaled_sleep,
)
from campaigns.services.memory.dispatch import send_on_commit
from context_engine.llm import is_offline
from context_engine.memory import (
    define_from_sources,
    extract_candidates,
    guess_category,
    mentions,
    merge_key,
    readable_by_audience,
    recurring_phrases,
    sentences_mentioning,
)
from context_engine.types import TurnView
from context_engine.visibility import Visibility, audience_key, parse_stored_visibility

log = logging.getLogger(__name__)

HYDRATE_ACTOR = "task:hydrate"
DEFINE_ACTOR = "task:define"
INVALIDATING_TAGS = ("dead", "gone", "destroyed", "lost", "invalid")
TAG_CATEGORIES = {"npc": "npc", "item": "artifact", "location": "location", "faction": "faction"}
PHRASE_CORPUS_TURNS = 300  # recurring phrases are looked for in this many latest turns
CORPUS_TURNS = 2000  # one turn's hydration reads at most this many turns up to it
MAX_TERM_CHARS = 200


@dataclass
class HydrateReport:
    created: list[int] = field(default_factory=list)
    updated: list[int] = field(default_factory=list)
    invalidated: list[int] = field(default_factory=list)

    def as_dict(self) -> dict[str, list[int]]:
        return {"created": self.created, "updated": self.updated, "invalidated": self.invalidated}

    def merge(self, other: HydrateReport) -> None:
        self.created += other.created
        self.updated += [pk for pk in other.updated if pk not in self.updated]
        self.invalidated += other.invalidated


def _near(a: str, b: str) -> bool:
    """One merge key's words appear as a contiguous run in the other's."""
    small, big = sorted((a.split(), b.split()), key=len)
    if not small or len(small) == len(big):
        return False
    return any(big[i : i + len(small)] == small for i in range(len(big) - len(small) + 1))


class Hydrator:
    """Hydrates turns of one experiment; caches the log and entry keys between turns."""

    def __init__(
        self, experiment: Experiment, *, up_to_seq: int | None = None, window: int | None = None
    ):
        self.experiment = experiment
        self.up_to_seq = up_to_seq
        self.window = window
        self.roles = sorted(experiment.participants.values_list("role", flat=True))
        self.dms = dm_roles(experiment=experiment)
        self._turns: list[TurnView] | None = None
        self._keys: dict[str, dict[str, int]] | None = None  # audience_key → {key: pk}
        client = definer_client(experiment)
        self.define_later = not is_offline(client)

    # -- cached reads -----------------------------------------------------------------
    def turns(self) -> list[TurnView]:
        """Every lore-eligible turn (the hydrator writes per audience, reads the log)."""
        if self._turns is None:
            rows = digest_turns(turns_visible_to(experiment=self.experiment, viewer=OMNISCIENT))
            if self.up_to_seq is not None:
                rows = rows.filter(seq__lte=self.up_to_seq)
            if self.window is not None:
                rows = reversed(rows.order_by("-seq")[: self.window])
            self._turns = [turn_view(turn, self.dms) for turn in rows]
        return self._turns

    def keys(self) -> dict[str, dict[str, int]]:
        if self._keys is None:
            self._keys = {}
            rows = LoreEntry.objects.filter(experiment=self.experiment).values_list(
                "audience_key", "key", "pk"
            )
            for akey, key, pk in rows:
                self._keys.setdefault(akey, {})[key] = pk
        return self._keys

    def _match(self, akey: str, key: str) -> int | None:
        entries = self.keys().get(akey, {})
        if key in entries:
            return entries[key]
        near = [pk for other, pk in entries.items() if _near(key, other)]
        return near[0] if len(near) == 1 else None

    def _covering(self, visibility: Visibility, key: str) -> int | None:
        """An entry of a broader audience every reader of ``visibility`` can read."""
        for akey in sorted(self.keys()):
            if akey == audience_key(visibility):
                continue
            audience = None if akey == "*" else tuple(filter(None, akey.split("|")))
            if readable_by_audience(audience, visibility):
                pk = self._match(akey, key)
                if pk is not None:
                    return pk
        return None

    # -- one turn ---------------------------------------------------------------------
    def candidates(self, turn: TurnView, corpus: list[TurnView]) -> list[tuple[str, str]]:
        found: dict[str, tuple[str, str]] = {}
        for candidate in extract_candidates(turn.content, ignore=self.roles):
            found.setdefault(candidate.key, (candidate.term, candidate.category))
        for tag in turn.tags:
            prefix, _, rest = tag.partition(":")
            name = rest.partition(":")[0].strip()
            category = TAG_CATEGORIES.get(prefix.strip().lower())
            if category and name and name not in self.roles and mentions(name, turn.content):
                found.setdefault(merge_key(name), (name, category))
        texts = [t.content for t in corpus[-PHRASE_CORPUS_TURNS:]]
        for phrase in recurring_phrases(texts):
            if mentions(phrase, turn.content):
                usage = sentences_mentioning(phrase, turn.content)
                found.setdefault(
                    merge_key(phrase), (phrase, guess_category(phrase, usage[0] if usage else ""))
                )
        return [(term[:MAX_TERM_CHARS], category) for key, (term, category) in found.items() if key]

    def hydrate(self, turn: TurnView) -> HydrateReport:
        report = HydrateReport()
        if turn.kind == Turn.Kind.MONOLOGUE or not any(t.id == turn.id for t in self.turns()):
            return report
        corpus = [
            t
            for t in self.turns()
            if t.seq <= turn.seq and readable_by_audience(t.visibility, turn.visibility)
        ]
        with transaction.atomic():
            for term, category in self.candidates(turn, corpus):
                self._upsert(term, category, turn, corpus, report)
            self._invalidate(turn, report)
        return report

    def _upsert(
        self, term: str, category: str, turn: TurnView, corpus: list[TurnView], report
    ) -> None:
        key = merge_key(term)
        akey = audience_key(turn.visibility)
        pk = self._match(akey, key)
        if pk is None and self._covering(turn.visibility, key) is not None:
            return  # a broader entry already tells this audience about the term
        if pk is None:
            pk = self._create(term, key, category, turn, corpus, report)
            if pk is None:
                return
        if self._add_source(pk, turn) and pk not in report.created + report.updated:
            report.updated.append(pk)

    def _create(
        self, term: str, key: str, category: str, turn: TurnView, corpus, report
    ) -> int | None:
        defined = define_from_sources(
            term, corpus, client=None, audience=turn.visibility, category=category
        )
        if defined is None:  # the rules found it, but not under its own merge key
            return None
        akey = audience_key(turn.visibility)
        try:
            with transaction.atomic():
                entry = LoreEntry.objects.create(
                    experiment=self.experiment,
                    term=term,
                    key=key,
                    category=defined.category,
                    definition=defined.definition,
                    audience=None if turn.visibility is None else list(turn.visibility),
                    audience_key=akey,
                    first_seen_round=defined.first_seen_round,
                    last_seen_round=defined.last_seen_round,
                    mention_count=defined.mention_count,
                    status=LoreEntry.Status.PROPOSED,
                    origin=LoreEntry.Origin.EXTRACTED,
                )
                entry.source_turns.set(defined.source_turn_ids)
                LoreRevision.objects.create(
                    entry=entry,
                    actor=HYDRATE_ACTOR,
                    changes={
                        "term": [None, term],
                        "category": [None, entry.category],
                        "definition": [None, entry.definition],
                        "audience": [None, entry.audience],
                        "status": [None, entry.status],
                    },
                )
        except IntegrityError:  # another worker created it first: use theirs
            existing = LoreEntry.objects.filter(
                experiment=self.experiment, key=key, audience_key=akey
            ).first()
            if existing is None:
                return None
            self.keys().setdefault(akey, {})[key] = existing.pk
            return existing.pk
        self.keys().setdefault(akey, {})[key] = entry.pk
        report.created.append(entry.pk)
        if self.define_later:
            send_on_commit("define_term", entry.pk)
        return entry.pk

    def _add_source(self, pk: int, turn: TurnView) -> bool:
        """Record ``turn`` as a mention; recount from the sources. True if changed."""
        entry = LoreEntry.objects.select_for_update().filter(pk=pk).first()
        if entry is None or entry.locked or entry.origin == LoreEntry.Origin.DM:
            return False
        if entry.status == LoreEntry.Status.REJECTED:
            return False
        audience = parse_stored_visibility(entry.audience, self.dms)
        if not readable_by_audience(turn.visibility, audience):
            return False  # never widen what an entry draws on beyond its audience
        if entry.source_turns.filter(pk=turn.id).exists():
            return False
        entry.source_turns.add(turn.id)
        rounds = list(entry.source_turns.values_list("round", flat=True))
        wanted = {
            "mention_count": len(rounds),
            "first_seen_round": min(rounds),
            "last_seen_round": max(rounds),
        }
        changes = {
            name: [getattr(entry, name), value]
            for name, value in wanted.items()
            if getattr(entry, name) != value
        }
        changes["source_turns"] = [None, turn.id]
        for name, (_, value) in changes.items():
            if name != "source_turns":
                setattr(entry, name, value)
        entry.save(update_fields=[n for n in changes if n != "source_turns"] + ["updated_at"])
        LoreRevision.objects.create(entry=entry, actor=HYDRATE_ACTOR, changes=changes)
        return True

    def _invalidate(self, turn: TurnView, report: HydrateReport) -> None:
        for tag in turn.tags:
            prefix, _, rest = tag.partition(":")
            if prefix.strip().lower() not in INVALIDATING_TAGS:
                continue
            key = merge_key(rest.partition(":")[0])
            if not key:
                continue
            for akey in sorted(self.keys()):
                pk = self._match(akey, key)
                if pk is not None and self._invalidate_entry(pk, turn):
                    report.invalidated.append(pk)

    def _invalidate_entry(self, pk: int, turn: TurnView) -> bool:
        entry = LoreEntry.objects.select_for_update().filter(pk=pk).first()
        if entry is None or entry.locked or entry.origin == LoreEntry.Origin.DM:
            return False
        audience = parse_stored_visibility(entry.audience, self.dms)
        if not readable_by_audience(turn.visibility, audience):
            return False
        if entry.invalid_from_round is not None and entry.invalid_from_round <= turn.round:
            return False
        if entry.valid_from_round is not None and turn.round < entry.valid_from_round:
            return False
        old = entry.invalid_from_round
        entry.invalid_from_round = turn.round
        entry.save(update_fields=["invalid_from_round", "updated_at"])
        LoreRevision.objects.create(
            entry=entry,
            actor=HYDRATE_ACTOR,
            changes={"invalid_from_round": [old, turn.round], "turn": [None, turn.id]},
        )
        return True


def hydrate_turn(*, turn: Turn) -> dict[str, list[int]]:
    """Hydrate the World Bible from one turn (see the module doc for every rule)."""
    hydrator = Hydrator(turn.experiment, up_to_seq=turn.seq, window=CORPUS_TURNS)
    return hydrator.hydrate(turn_view(turn, hydrator.dms)).as_dict()


def hydrate_experiment(*, experiment: Experiment) -> dict[str, list[int]]:
    """Hydrate every turn in story order: catch-up for imported logs (the demo), idempotent."""
    hydrator = Hydrator(experiment)
    total = HydrateReport()
    for view in list(hydrator.turns()):
        total.merge(hydrator.hydrate(view))
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
    if entry.revisions.filter(actor=DEFINE_ACTOR).exists():
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
    defined = define_from_sources(
        entry.term,
        sources,
        client=client,
        audience=audience,
        category=entry.category,
        sleep=scaled_sleep,
    )
    if defined is not None and defined.method != "llm":
        mark_down(client)  # it had sentences to work from, so the model failed
    if defined is None or defined.method != "llm" or not defined.definition:
        return None
    mark_up(client)
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
