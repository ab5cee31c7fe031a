"""Transcript import and export (SPEC §8): a lossless, byte-stable round trip.

Format::

    {"format": "babel-transcript/1",
     "experiment": {name, hook, rules, config, status},
     "participants": [{role, kind, model, bio, identity, secret, reveal_round, order}],
     "turns": [{[key,] round, speaker, kind, content, visibility, tags, hinge[, needs_review]}],
     "lore": [{term, category, definition, audience, status, origin, locked,
               first_seen_round, last_seen_round, mention_count,
               valid_from_round, invalid_from_round, source_turns: [turn index, …]}],
     "facts": [{id, round, audience, answer: [str, …], question}],   (optional, the Arena's)
     "questions": [{question, answer, evidence: [turn key, …], category[, role],
                    asked_at_round}]}   (optional: the Arena's evidence recall)

Turns are listed in seq order; a turn's index in the list (0-based) is how lore points
at its sources, and its optional ``key`` (unique, 1–64 chars) how questions name
evidence. Import runs in one transaction: a bad file stores nothing, and the error
names the element and field, e.g. ``turns[3].visibility``.
"""

from campaigns.services.transcripts import uploads
from campaigns.services.transcripts.common import FORMAT
from campaigns.services.transcripts.export import dumps, export_file, export_transcript
from campaigns.services.transcripts.importer import import_transcript, loads
from campaigns.services.transcripts.indexing import SEARCH_INDEX_BATCH, index_imported_turns

__all__ = [
    "FORMAT",
    "SEARCH_INDEX_BATCH",
    "dumps",
    "export_file",
    "export_transcript",
    "import_transcript",
    "index_imported_turns",
    "loads",
    "uploads",
]
