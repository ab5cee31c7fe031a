"""Model vetting of the World Bible at a checkpoint (issue 10), when a model is configured.

New extracted proposals (not locked, not DM-made, not touched by a person, not vetted
before) go to the definer model in batches, each with its first-use sentences taken
only from sources its audience may read (`usable_sources`). The model's verdict sets
the category and the definition, and ``keep: false`` rejects the entry (it then never
reaches a pack; the DM can restore it). Each change is a `LoreRevision` by
``task:vet``, claimed by a conditional UPDATE so a DM edit made meanwhile wins.
Offline, or when the model fails, nothing changes.
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
    mark_down,
    mark_up,
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


def _unvetted(experiment: Experiment):
    touched = LoreRevision.objects.filter(Q(actor=VET_ACTOR) | Q(actor__startswith="user:")).values(
        "entry_id"
    )
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
    return Proposal(entry.term, entry.category, tuple(sentences[:SENTENCES_PER_TERM]))


def vet_entries(*, experiment: Experiment, max_batches: int = 4) -> dict[str, int]:
    """Vet up to ``max_batches`` batches of new proposals; counts of what changed."""
    counts = {"vetted": 0, "rejected": 0}
    client = definer_client(experiment)
    if is_offline(client) or model_down(client):
        return counts
    dms = dm_roles(experiment=experiment)
    for _ in range(max_batches):
        entries = list(_unvetted(experiment)[:VET_BATCH])
        if not entries:
            break
        proposals = {entry.pk: _proposal(entry, dms) for entry in entries}
        with worker_usage(experiment=experiment, worker="vet"):
            verdicts = vet_proposals(
                [p for p in proposals.values() if p.sentences], client=client, sleep=scaled_sleep
            )
        if verdicts is None:
            mark_down(client)  # it failed: the next memory calls go straight to fallbacks
            break
        mark_up(client)
        for entry in entries:
            verdict = verdicts.get(entry.term)
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
