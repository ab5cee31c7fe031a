"""The fixed-shape strategies the Arena compares against ``layered`` (SPEC §5.7).

- ``full_history``: the baseline (what Babel did before). Every visible turn, all own
  monologues, every readable lore entry, the whole state; no digest, no retrieval. The
  transcript borrows everything the other sections leave unused, so it is the whole
  readable history up to the total budget; no selective trimming: what does not fit is
  hard-cut, oldest lines first, with a warning (the frozen section keeps hook and bios).
- ``sliding_window`` (option A): the last ``config.window_turns`` visible turns, hook
  and bios. Nothing else.
- ``rolling_summary`` (option B): the digest plus the last ``hot_window_rounds`` rounds.
- ``structured_state`` (option C): state and World Bible plus a small window (the last
  4 turns).

These report pressure and strain tier but do not change shape under strain; the §5.1
drop order still applies inside their windows. Visibility is identical for all.
"""

from __future__ import annotations

from context_engine import sections as secs
from context_engine import textops, tokens
from context_engine.candidates import View
from context_engine.commands import STRUCTURED_WINDOW_TURNS
from context_engine.lines import Entry, stub_entry, turn_entry
from context_engine.strain import tier
from context_engine.strategies.common import (
    Draft,
    Statics,
    apply_cut,
    block,
    build_sections,
    last_window,
    round_window,
    statics,
    window_start_event,
)
from context_engine.trimming import assemble, cut_tail_keeping, entry_line, protected_refs, render
from context_engine.types import SECTION_NAMES, PackInput, PackItem, Section, TrimEvent

RECENT_HEADER = "## Recent events"
HISTORY_HEADER = "## Campaign transcript"


def transcript(header: str, window: list[Entry], protected: frozenset[str]):
    def build(budget: int):
        return assemble("recent", budget, header, [entry_line(e, protected) for e in window])

    return build


def need(header: str, window: list[Entry]) -> int:
    return textops.count(header) + 1 + sum(e.cost for e in window) if window else 0


def frozen_builder(view: View, inp: PackInput, with_lore: bool):
    lore = secs.lore_candidates(view) if with_lore else ()

    def build(budget: int):
        section, events, warnings, _ = secs.frozen_section(
            view, inp.hook, budget, lore, frozenset()
        )
        return section, events, warnings

    return build, secs.frozen_need(view, inp.hook, lore)


def _static_need(texts: Statics, *, state: bool, digest: bool) -> int:
    total = textops.count(texts.identity) + textops.count(texts.rules) + textops.count(texts.input)
    if state:
        total += textops.count(texts.state.text)
    if digest:
        total += textops.count(texts.digest)
    return total


def windowed(
    inp: PackInput,
    view: View,
    window: list[Entry],
    older_events: list[TrimEvent],
    *,
    lore: bool,
    state: bool,
    digest: bool,
) -> Draft:
    texts = statics(inp, view)
    draft = Draft(sections={})
    draft.events += list(view.events) + older_events
    window, cut_events = apply_cut(window, view.cut, view)
    draft.events += cut_events
    protected = protected_refs(window, view.dm_roles)
    frozen, frozen_need = frozen_builder(view, inp, lore)
    draft.untrimmed = (
        _static_need(texts, state=state, digest=digest) + frozen_need + need(RECENT_HEADER, window)
    )
    draft.strain = tier(draft.untrimmed, inp.config.total_budget)
    builders = {
        "identity": block("identity", texts.identity, "identity"),
        "rules": block("rules", texts.rules, "rules"),
        "frozen": frozen,
        "recent": transcript(RECENT_HEADER, window, protected),
        "input": block("input", texts.input, "input"),
    }
    if state:
        builders["state"] = block("state", texts.state.text, "state")
    if digest:
        builders["digest"] = block("digest", texts.digest, "digest")
    build_sections(inp, SECTION_NAMES, builders, draft, (("recent", True),))
    return draft


def sliding_window(inp: PackInput, view: View) -> Draft:
    window, older = last_window(view, inp.config.window_turns)
    events = window_start_event(older, view, f"last-{inp.config.window_turns}")
    return windowed(inp, view, window, events, lore=False, state=False, digest=False)


def rolling_summary(inp: PackInput, view: View) -> Draft:
    window, older = round_window(view, inp.config.hot_window_rounds)
    events = window_start_event(older, view, f"round-{view.now - inp.config.hot_window_rounds + 1}")
    return windowed(inp, view, window, events, lore=False, state=False, digest=True)


def structured_state(inp: PackInput, view: View) -> Draft:
    window, older = last_window(view, STRUCTURED_WINDOW_TURNS)
    events = window_start_event(older, view, f"last-{STRUCTURED_WINDOW_TURNS}")
    return windowed(inp, view, window, events, lore=True, state=True, digest=False)


def _frozen_hard(view: View, inp: PackInput, budget: int):
    """Baseline frozen section: everything in full, hard-cut from the end if too long.

    Hook and bios come first, so a hard cut reaches them only if they alone overflow,
    and then nothing is cut (they are never cut) and a warning says so.
    """
    base, items = secs.base_lines(view, inp.hook)
    lore = secs.lore_candidates(view)
    lines = list(base)
    if lore:
        lines.append(secs.LORE_HEADER)
        lines.extend(c.line for c in lore)
    text = render(secs.FROZEN_HEADER, lines)
    used = textops.count_uncached(text) if text else 0
    events: list[TrimEvent] = []
    warnings: list[str] = []
    if used > budget:
        base_text = render(secs.FROZEN_HEADER, base)
        base_tokens = textops.count(base_text) if base_text else 0
        fits = base_tokens <= budget
        cut = tokens.truncate(text, budget) if fits else base_text
        saved = used - textops.count_uncached(cut)
        events.append(
            TrimEvent(
                "frozen",
                "section:frozen",
                "truncated",
                f"{used} tokens exceed the {budget}-token cap; hard cut "
                "(hook and bios are never cut)",
                saved,
            )
        )
        if fits:
            warnings.append(f"frozen: {used} tokens exceed its {budget}-token cap; hard cut")
        else:
            warnings.append(
                f"frozen: hook and bios need {base_tokens} tokens, over the {budget}-token "
                "budget; they are never cut"
            )
        text, used = cut, textops.count_uncached(cut)
    items += [PackItem("lore", f"lore:{c.lore.id}", c.cost) for c in lore if c.line in text]
    return (
        Section("frozen", budget, used, text, tuple(items), trimmed=bool(events)),
        events,
        warnings,
    )


def full_history(inp: PackInput, view: View) -> Draft:
    texts = statics(inp, view, prune_state=False)
    entries = [turn_entry(t) for t in view.turns] + [stub_entry(t) for t in view.stubs]
    entries.sort(key=lambda e: (e.seq, e.ref))
    draft = Draft(sections={})
    lore = secs.lore_candidates(view)
    draft.untrimmed = (
        _static_need(texts, state=True, digest=False)
        + secs.frozen_need(view, inp.hook, lore)
        + need(HISTORY_HEADER, entries)
    )
    draft.strain = tier(draft.untrimmed, inp.config.total_budget)
    builders = {
        "identity": block("identity", texts.identity, "identity"),
        "rules": block("rules", texts.rules, "rules"),
        "frozen": lambda budget: _frozen_hard(view, inp, budget),
        "state": block("state", texts.state.text, "state"),
        "recent": lambda budget: cut_tail_keeping("recent", budget, HISTORY_HEADER, entries),
        "input": block("input", texts.input, "input"),
    }
    build_sections(inp, SECTION_NAMES, builders, draft, (("recent", True),))
    return draft
