"""The seven pack strategies of SPEC §5.7, selected by ``PackConfig.strategy``.

Each takes the `PackInput` and the role's already visibility-filtered `View` and
returns a `Draft` with all eight sections in table order; `pack.build_pack` turns it
into the `Pack`. Visibility is never a strategy's business: it was settled in
`candidates.gather` before any of them runs.
"""

from __future__ import annotations

from collections.abc import Callable

from context_engine.candidates import View
from context_engine.strategies import baselines, layered, tiered, triage
from context_engine.strategies.common import Draft
from context_engine.types import PackInput

STRATEGY_BUILDERS: dict[str, Callable[[PackInput, View], Draft]] = {
    "full_history": baselines.full_history,
    "sliding_window": baselines.sliding_window,
    "rolling_summary": baselines.rolling_summary,
    "structured_state": baselines.structured_state,
    "layered": layered.build,
    "triage": triage.build,
    "tiered": tiered.build,
}
