"""The World Bible hydrator's batch engine: incremental statistics, bulk writes.

A batch reads the turns after the experiment's `HydrationCursor` (locked for the whole
batch, so hydrate tasks serialise and a redelivered one adds nothing), folds each turn's
observations (`context_engine.memory.observe`) into the per-audience `VocabularyStat`
rows, creates entries whose evidence is now enough, adds the turn as a source of the
entries it mentions, applies invalidation tags, and writes it all in a handful of bulk
statements. Cost: O(batch turns + the statistics rows their terms touch + the entry
keys), never O(history). Rules about audiences are the hydrator's (module doc of
`hydrate`): an entry for audience V draws only on rows every member of V can read.
"""

from campaigns.services.memory.batch.engine import Batch
from campaigns.services.memory.batch.entries import HYDRATE_ACTOR, INVALIDATING_TAGS

__all__ = ["HYDRATE_ACTOR", "INVALIDATING_TAGS", "Batch"]
