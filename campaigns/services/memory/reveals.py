"""Reveals re-derive (SPEC §4, issue 10): after a turn's audience widens, the new readers'
World Bible and digests include it; what was derived before stays as it was.

`reveal_rederive` runs as a background task for one `VisibilityChange` (send it with
`after_reveal` once the change is committed). For the World Bible, the turn's evidence
moves from its old visibility's statistics to the new one's and the turn is hydrated
for its new audience (entries for that audience are made or updated; the old, narrower
entries are kept, never widened). For digests, every audience with a digest that may now read
the turn but whose digest already covered its place in the log gets one more version
folding the revealed turn in, without moving its coverage (so no later turn is folded
twice); audiences with no digest yet simply include it when they are first summarised.
Idempotent: a turn already in an audience's digest chain, or already hydrated for its
audience, is not added again.

Secret goals that pass their reveal round need nothing here: no derived artifact holds
a secret (packs read it through `secret_readable` by round).
"""

from __future__ import annotations

from dataclasses import replace

from django.db import transaction

from campaigns.models import HydrationCursor, Summary, VisibilityChange, VocabularyStat
from campaigns.reads.adapters import turn_view
from campaigns.reads.selectors import UnknownRole, dm_roles
from campaigns.services.dispatch import send_on_commit
from campaigns.services.memory.audiences import audiences_for, turns_for_audience
from campaigns.services.memory.batch import Batch
from campaigns.services.memory.digests import DigestPlan, commit_digest, latest_summary
from context_engine.memory.observe import TermStats
from context_engine.visibility import audience_key, parse_stored_visibility


def after_reveal(*, change: VisibilityChange) -> None:
    """Dispatch hook for the service that records a reveal."""
    send_on_commit("rederive_reveal", change.pk)


def _remove(stats: TermStats, obs, turn_id: int) -> TermStats | None:
    turns = stats.turns - 1
    if turns <= 0:
        return None
    return replace(
        stats,
        mentions=max(0, stats.mentions - obs.mentions),
        turns=turns,
        mid=max(0, stats.mid - obs.mid),
        source_ids=tuple(i for i in stats.source_ids if i != turn_id),
        contexts=tuple(c for c in stats.contexts if c[0] != turn_id),
    )


def _rehydrate(change: VisibilityChange) -> None:
    turn = change.turn
    experiment = change.experiment
    dms = dm_roles(experiment=experiment)
    cursor = HydrationCursor.objects.filter(experiment=experiment).first()
    if cursor is None or cursor.seq < turn.seq:
        return  # not hydrated yet: the normal pass will read it with its new visibility
    old = parse_stored_visibility(change.old_visibility, dms)
    new_view = turn_view(turn, dms)
    if audience_key(old) == audience_key(new_view.visibility):
        return
    roles = sorted(experiment.participants.values_list("role", flat=True))
    with transaction.atomic():
        HydrationCursor.objects.select_for_update().get(pk=cursor.pk)
        batch = Batch(experiment, roles=roles, dms=dms)
        observations = batch.observe(new_view)
        batch.load_stats(o.key for o in observations)
        old_key = audience_key(old)
        new_key = audience_key(new_view.visibility)
        for obs in observations:
            done = batch.stats.get((new_key, obs.key))
            if done is not None and turn.pk in done.source_ids:
                return  # already re-derived (a rerun)
        for obs in observations:
            slot = (old_key, obs.key)
            current = batch.stats.get(slot)
            if current is None or turn.pk not in current.source_ids:
                continue
            remaining = _remove(current, obs, turn.pk)
            if remaining is None:
                VocabularyStat.objects.filter(
                    experiment=experiment, audience_key=old_key, key=obs.key
                ).delete()
                batch.stats.pop(slot, None)
                batch.stat_pks.pop(slot, None)
                batch.dirty.discard(slot)
                batch.akeys_of.get(obs.key, set()).discard(old_key)
            else:
                batch.stats[slot] = remaining
                batch.dirty.add(slot)
        batch.add(new_view, observations)
        batch.flush()


def _refold(change: VisibilityChange) -> list[int]:
    turn = change.turn
    experiment = change.experiment
    created: list[int] = []
    stored = {
        tuple(sorted(audience or ()))
        for audience in Summary.objects.filter(
            experiment=experiment, kind=Summary.Kind.DIGEST
        ).values_list("audience", flat=True)
    }
    # Every audience with a digest (packs read those), and the current groupings.
    for audience in sorted(stored | set(audiences_for(experiment=experiment))):
        if not audience:
            continue
        try:
            readable = turns_for_audience(
                experiment=experiment,
                audience=audience,
                after_seq=turn.seq - 1,
                up_to_seq=turn.seq,
            )
        except UnknownRole:
            continue  # a stored audience whose role is gone: nobody reads that digest
        if not readable:
            continue  # this audience still may not read it
        key = audience_key(audience)
        previous = latest_summary(experiment=experiment, kind=Summary.Kind.DIGEST, key=key)
        if previous is None or previous.covered_seq < turn.seq:
            continue  # its next ordinary fold will include the turn
        folded = Summary.objects.filter(
            experiment=experiment, kind=Summary.Kind.DIGEST, audience_key=key
        ).values_list("source_turn_ids", flat=True)
        if any(turn.pk in (ids or []) for ids in folded):
            continue
        plan = DigestPlan(
            audience=tuple(audience),
            key=key,
            previous=previous,
            turns=tuple(readable),
            round_to=previous.round_to,
            late=True,
        )
        summary = commit_digest(experiment=experiment, plan=plan)
        if summary is not None:
            created.append(summary.pk)
    return created


def reveal_rederive(*, change: VisibilityChange) -> dict:
    """Re-derive lore and digests after one reveal (see the module doc)."""
    if change.turn_id is None:
        return {"digests": []}
    _rehydrate(change)
    return {"digests": _refold(change)}
