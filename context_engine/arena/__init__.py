"""The Arena (SPEC §5.7): replay a campaign, score every strategy × budget on facts.

Pure Python like the rest of the engine: `History` is the whole campaign loaded once
(frozen dataclasses), `Replay` rebuilds every role's pack as of any round (digests and
strategic summaries folded in memory with the offline template, lore as it stood),
`judge` scores packs against planted facts, `recall` scores evidence recall against the
`floors` (recency and BM25 at equal tokens), and `run_arena` produces the report.
"""

from context_engine.arena.facts import FactView, derive_facts, entitled, is_hinge_fact
from context_engine.arena.judge import JudgeStats, ModelJudge, OfflineJudge
from context_engine.arena.recall import QuestionView
from context_engine.arena.replay import History, Replay, scaled_config
from context_engine.arena.run import (
    DEFAULT_BUDGETS,
    DEFAULT_EVERY,
    ArenaOptions,
    check_bar,
    checkpoints_for,
    format_table,
    recommend,
    run_arena,
)

__all__ = [
    "DEFAULT_BUDGETS",
    "DEFAULT_EVERY",
    "ArenaOptions",
    "FactView",
    "History",
    "JudgeStats",
    "ModelJudge",
    "OfflineJudge",
    "QuestionView",
    "Replay",
    "check_bar",
    "checkpoints_for",
    "derive_facts",
    "entitled",
    "format_table",
    "is_hinge_fact",
    "recommend",
    "run_arena",
    "scaled_config",
]
