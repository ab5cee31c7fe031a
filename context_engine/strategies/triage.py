"""``triage``: the four-tier context of the Triage seed (SPEC §5.7).

1. core — identity (with the agent's own secret), rules, hook and bios, World Bible;
2. now — the WorldState snapshot and the last 3 visible turns in full;
3. recent — turns 4 to 10 (counting back) as one-line bullet points;
4. deep history — the recursive summary of everything older: the digest (and the
   agent's strategic summary of its older thoughts).

The last DM choice stays in full even when it falls among the bullets (§5.1). Under
budget pressure the oldest bullets go first, then full turns by the §5.1 drop order.
Strain is reported, not acted on: the tiers already are the compression.
"""

from __future__ import annotations

from context_engine import sections as secs
from context_engine import textops
from context_engine.candidates import View
from context_engine.commands import TRIAGE_BULLET_UNTIL, TRIAGE_FULL_TURNS
from context_engine.lines import Entry, condensed_line
from context_engine.strain import tier
from context_engine.strategies.common import (
    Draft,
    apply_cut,
    block,
    build_sections,
    last_window,
    statics,
    window_start_event,
    window_texts,
)
from context_engine.trimming import Line, assemble, entry_line, protected_refs
from context_engine.types import SECTION_NAMES, PackInput, PackItem, TrimEvent

HEADER = "## Recent events (older ones as bullet points)"
BULLET_WORDS = 25


def bullet(entry: Entry) -> Line:
    text = condensed_line(entry, BULLET_WORDS)
    cost = textops.count(text) + 1
    return Line(
        order=(1, entry.seq),
        text=text,
        item=PackItem("bullet", entry.ref, cost),
        cost=cost,
        drop_key=(0, entry.seq),
        reason="triage: the oldest bullet goes first",
    )


def build(inp: PackInput, view: View) -> Draft:
    texts = statics(inp, view)
    window, older = last_window(view, TRIAGE_BULLET_UNTIL)
    draft = Draft(sections={})
    draft.events += list(view.events) + window_start_event(older, view, "last-10")
    window, cut_events = apply_cut(window, view.cut, view)
    draft.events += cut_events
    protected = protected_refs(window, view.dm_roles)
    full_refs = {e.ref for e in window[-TRIAGE_FULL_TURNS:]} | protected
    lines: list[Line] = []
    for entry in window:
        if entry.ref in full_refs:
            line = entry_line(entry, protected)
            if line.drop_key is not None:
                line = Line(
                    line.order, line.text, line.item, line.cost, (1, *line.drop_key), line.reason
                )
            lines.append(line)
        else:
            lines.append(bullet(entry))
            draft.events.append(
                TrimEvent(
                    "recent",
                    entry.ref,
                    "degraded",
                    "triage: turns 4-10 are bullet points",
                    0,
                    cause="window",
                )
            )
    lore = secs.lore_candidates(view)
    named = secs.named_lore_ids(lore, window_texts(window, inp.input_text))

    def frozen(budget: int):
        section, events, warnings, _ = secs.frozen_section(view, inp.hook, budget, lore, named)
        return section, events, warnings

    recent_need = textops.count(HEADER) + 1 + sum(e.cost for e in window) if window else 0
    draft.untrimmed = (
        textops.count(texts.identity)
        + textops.count(texts.rules)
        + secs.frozen_need(view, inp.hook, lore)
        + textops.count(texts.state.text)
        + textops.count(texts.digest)
        + recent_need
        + textops.count(texts.input)
    )
    draft.strain = tier(draft.untrimmed, inp.config.total_budget)
    builders = {
        "identity": block("identity", texts.identity, "identity"),
        "rules": block("rules", texts.rules, "rules"),
        "frozen": frozen,
        "state": block("state", texts.state.text, "state"),
        "digest": block("digest", texts.digest, "digest"),
        "recent": lambda budget: assemble("recent", budget, HEADER, lines),
        "input": block("input", texts.input, "input"),
    }
    build_sections(inp, SECTION_NAMES, builders, draft)
    return draft
