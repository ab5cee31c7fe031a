"""`build_pack`: one agent's prompt pack, deterministic and fully logged.

    PackInput ──gather (visibility first)──▶ View ──strategy──▶ Draft ──▶ Pack

No clock, no randomness: every sort has an explicit tie-breaker (seq, id, name), so
the same input gives a byte-identical pack (see `render.pack_to_json`).
"""

from __future__ import annotations

from dataclasses import replace

from context_engine import strain as strain_mod
from context_engine import window as window_mod
from context_engine.candidates import gather
from context_engine.strategies import STRATEGY_BUILDERS
from context_engine.types import SECTION_NAMES, STRATEGIES, Pack, PackInput, Section


def build_pack(inp: PackInput) -> Pack:
    """Build ``inp.role``'s pack with ``inp.config.strategy``.

    Raises ``ValueError`` for an unknown strategy and ``UnknownRoleError`` (a
    ``ValueError``) for a role with no participant.
    """
    strategy = inp.config.strategy
    if strategy not in STRATEGIES:
        raise ValueError(f"Unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}.")
    cap = None
    if inp.window is not None:  # the campaign's budget, capped to the model's window
        config, cap = window_mod.fit(inp.config, inp.window)
        inp = replace(inp, config=config)
    view = gather(inp, keep_all_monologues=strategy == "full_history")
    draft = STRATEGY_BUILDERS[strategy](inp, view)
    touched = {e.section for e in draft.events if e.cause in ("budget", "strain")}
    sections: list[Section] = []
    for name in SECTION_NAMES:
        section = draft.sections[name]
        if name in touched and not section.trimmed:
            section = replace(section, trimmed=True)
        sections.append(section)
    total_budget = inp.config.total_budget
    return Pack(
        role=inp.role,
        strategy=strategy,
        budget=total_budget,
        sections=tuple(sections),
        trim_log=tuple(draft.events),
        total_tokens=sum(s.tokens for s in sections),
        untrimmed_tokens=draft.untrimmed,
        pressure=strain_mod.pressure(draft.untrimmed, total_budget),
        strain=draft.strain,
        warnings=tuple(draft.warnings),
        cap=cap,
    )
