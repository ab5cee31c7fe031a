"""An edited turn's World Bible evidence follows its new text (issue 24 ask 4).

`edit_rehydrate` runs as a background task for one `TurnRevision` (sent after commit by
`services.turn_fixes`). If the hydrator has already read the turn, the old text's
observations leave the vocabulary statistics of the turn's audience and the current
text's are added, as the hydrator would have added them (new terms may become entries,
existing entries gain the turn as a source). Not yet read: nothing to do, the normal pass
reads the current text. Under the hydration cursor's lock, like every hydrate batch.

Entries already sourced from the turn were updated in the edit's own transaction
(`turn_fixes._lore_follows`); this only moves the statistics that propose entries.
"""

from __future__ import annotations

from dataclasses import replace

from django.db import transaction

from campaigns.models import HydrationCursor, Turn, TurnRevision, VocabularyStat
from campaigns.reads.adapters import turn_view
from campaigns.reads.selectors import dm_roles
from campaigns.services.memory.batch import Batch
from campaigns.services.memory.reveals import _remove
from context_engine.visibility import audience_key


def edit_rehydrate(*, revision: TurnRevision) -> dict | None:
    turn = Turn.objects.select_related("experiment").filter(pk=revision.turn_id).first()
    if turn is None or turn.held_at is not None:
        return None
    experiment = turn.experiment
    with transaction.atomic():
        cursor = HydrationCursor.objects.select_for_update().filter(experiment=experiment).first()
        if cursor is None or cursor.seq < turn.seq:
            return None  # not read yet: the normal pass reads the current text
        dms = dm_roles(experiment=experiment)
        roles = sorted(experiment.participants.values_list("role", flat=True))
        batch = Batch(experiment, roles=roles, dms=dms)
        now = turn_view(turn, dms)
        before = replace(now, content=revision.old_content)
        old_obs = batch.observe(before)
        batch.replays.clear()  # the two texts are one turn, not a replay of each other
        new_obs = batch.observe(now)
        batch.load_stats(o.key for o in [*old_obs, *new_obs])
        akey = audience_key(now.visibility)

        def holds_turn(key: str) -> bool:
            stats = batch.stats.get((akey, key))
            return stats is not None and turn.pk in stats.source_ids

        new_keys = {o.key for o in new_obs}
        if all(holds_turn(k) for k in new_keys) and not any(
            holds_turn(o.key) for o in old_obs if o.key not in new_keys
        ):
            return {"removed": 0, "added": 0}  # done already (a rerun), or nothing moves
        removed = 0
        for obs in old_obs:
            slot = (akey, obs.key)
            current = batch.stats.get(slot)
            if current is None or turn.pk not in current.source_ids:
                continue
            removed += 1
            remaining = _remove(current, obs, turn.pk)
            if remaining is None:
                VocabularyStat.objects.filter(
                    experiment=experiment, audience_key=akey, key=obs.key
                ).delete()
                batch.stats.pop(slot, None)
                batch.stat_pks.pop(slot, None)
                batch.dirty.discard(slot)
                batch.akeys_of.get(obs.key, set()).discard(akey)
            else:
                batch.stats[slot] = remaining
                batch.dirty.add(slot)
        batch.add(now, new_obs)
        batch.flush()
    return {"removed": removed, "added": len(new_obs)}
