"""The Arena on stored experiments: load once, replay, judge, store (SPEC §5.7).

`history_for` loads a whole experiment with a fixed number of queries (through the
visibility selectors, as the omniscient reader: the replay re-applies each role's rule
with the engine's own predicate); `facts_for` gives its planted facts, or derives them,
and `questions_for` its evidence-recall questions;
`arena_report` runs the pure engine; `arena_start` / `arena_job_run` are the background
version behind `POST /api/experiments/{id}/arena/` and the console's button.
"""

from campaigns.services.arena.history import facts_for, history_for, judge_for, questions_for
from campaigns.services.arena.runs import (
    ArenaParams,
    arena_job_run,
    arena_report,
    arena_start,
    latest_arena_run,
)

__all__ = [
    "ArenaParams",
    "arena_job_run",
    "arena_report",
    "arena_start",
    "facts_for",
    "history_for",
    "judge_for",
    "latest_arena_run",
    "questions_for",
]
