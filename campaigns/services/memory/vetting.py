"""Model vetting of the World Bible at a checkpoint (issue 10), when a model is configured.

New extracted proposals (not locked, not DM-made, not touched by a person, not vetted
before) go to the definer model in batches, each with its first-use sentences taken
only from sources its audience may read (`usable_sources`). A batch holds one audience's
entries only (issue 23: a prompt that mixed a GM-only "Maelis Orrow" with the public one
let the model, and a by-term lookup, carry the GM note into the public entry), and each
verdict is applied to the entry it names by id, never to another entry with its term.
The model's verdict sets the category and the definition, and ``keep: false`` rejects
the entry (it then never reaches a pack; the DM can restore it). Each change is a
`LoreRevision` by ``task:vet``, claimed by a conditional UPDATE so a DM edit made
meanwhile wins. Offline, or when the model fails, nothing changes.
"""

from __future__ import annotations

from django.db.models import Q
from django.utils import timezone

from campaigns.models import Experiment, LoreEntry, LoreRevision
from campaigns.reads.adapters import turn_view
from campaigns.reads.selectors import dm_roles
from campaigns.services.memory.audiences import digest_turns
from campaigns.services.memory.backends import (
    definer_client,
    judge_calls,
    model_down,
    scaled_sleep,
)
from campaigns.services.usage import worker_usage
from context_engine.llm import is_offline
from context_engine.memory import sentences_mentioning, usable_sources
from context_engine.memory.vetting import Proposal, vet_proposals
from context_engine.visibility import parse_stored_visibility

VET_ACTOR = "task:vet"
SEEN_ACTOR = "task:vet-seen"  # sent to the model, not answered: the definer may still try
VET_BATCH = 25
SENTENCES_PER_TERM = 3
MAX_BATCHES = 8  # one audience a batch: room for the usual handful of audiences


def _unvetted(experiment: Experiment):
    touched = LoreRevision.objects.filter(
        Q(actor__in=[VET_ACTOR, SEEN_ACTOR]) | Q(actor__startswith="user:")
    ).values("entry_id")
    return (
        LoreEntry.objects.filter(
            experiment=experiment,
            origin=LoreEntry.Origin.EXTRACTED,
            status=LoreEntry.Status.PROPOSED,
            locked=False,
        )
        .exclude(pk__in=touched)
        .order_by("pk")
    )


def _proposal(entry: LoreEntry, dms: tuple[str, ...]) -> Proposal:
    audience = parse_stored_visibility(entry.audience, dms)
    rows = digest_turns(entry.source_turns.all()).order_by("seq")[:10]
    sources = [turn_view(t, dms) for t in rows]
    sentences: list[str] = []
    for turn in usable_sources(sources, audience):
        sentences += sentences_mentioning(entry.term, turn.content)
    return Proposal(
        id=entry.pk,
        term=entry.term,
        category=entry.category,
        sentences=tuple(sentences[:SENTENCES_PER_TERM]),
        audience=entry.audience_key,
    )


def _next_batch(experiment: Experiment) -> list[LoreEntry]:
    """The oldest unvetted entry and up to ``VET_BATCH - 1`` more of its audience."""
    unvetted = _unvetted(experiment)
    first = unvetted.first()
    if first is None:
        return []
    return list(unvetted.filter(audience_key=first.audience_key)[:VET_BATCH])


def vet_entries(*, experiment: Experiment, max_batches: int = MAX_BATCHES) -> dict[str, int]:
    """Vet up to ``max_batches`` batches of new proposals, one audience per batch;
    counts of what changed."""
    counts = {"vetted": 0, "rejected": 0}
    client = definer_client(experiment)
    if is_offline(client) or model_down(client):
        return counts
    dms = dm_roles(experiment=experiment)
    for _ in range(max_batches):
        entries = _next_batch(experiment)
        if not entries:
            break
        asked = [p for p in (_proposal(entry, dms) for entry in entries) if p.sentences]
        verdicts = {}
        if asked:  # nothing to quote (every source unreadable or gone): nothing to ask
            with worker_usage(experiment=experiment, worker="vet") as calls:
                verdicts = vet_proposals(asked, client=client, sleep=scaled_sleep)
            judge_calls(client, calls)  # down only when the model could not be reached
            if verdicts is None:  # no usable answer: the rules' proposals stand this time
                break
        for entry in entries:
            verdict = verdicts.get(entry.pk)  # by id: never another entry's answer
            if verdict is not None and _apply(entry, verdict, getattr(client, "model", "")):
                counts["vetted"] += 1
                counts["rejected"] += 0 if verdict.keep else 1
            else:  # not answered: mark it seen, so the next batch moves on
                LoreRevision.objects.create(
                    entry=entry, actor=SEEN_ACTOR, changes={"vetted": [None, False]}
                )
    return counts


def _apply(entry: LoreEntry, verdict, model: str) -> bool:
    wanted = {
        "category": verdict.category,
        "definition": verdict.definition or entry.definition,
        "status": LoreEntry.Status.PROPOSED if verdict.keep else LoreEntry.Status.REJECTED,
    }
    claimed = LoreEntry.objects.filter(
        pk=entry.pk,
        definition=entry.definition,
        category=entry.category,
        status=LoreEntry.Status.PROPOSED,
        locked=False,
        origin=LoreEntry.Origin.EXTRACTED,
    ).update(**wanted, updated_at=timezone.now())
    if not claimed:
        return False
    changes = {
        name: [getattr(entry, name), value]
        for name, value in wanted.items()
        if getattr(entry, name) != value
    }
    changes["model"] = [None, model]
    LoreRevision.objects.create(entry=entry, actor=VET_ACTOR, changes=changes)
    return True
