"""Texts of the single-block sections and the frozen section (hook, bios, World Bible).

Frozen-section rules (SPEC §5.1): the hook and every participant bio are never cut.
Lore named in the window or the input (case-insensitive whole-term match) gets its
full definition first; the rest is ranked by recency (``last_seen_round``) then
mentions; whatever does not fit degrades to one names-only line. Nothing is dropped
silently: each degrade is logged, and if even the names line cannot fit, its cut is
logged too.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from operator import attrgetter
from typing import NamedTuple

from context_engine import textops, tokens
from context_engine.candidates import View, secret_visible
from context_engine.lines import (
    FRAMING_NOTE,
    KIND_NAMES,
    bio_line,
    lore_line,
    lore_line_cost,
    lore_name,
)
from context_engine.trimming import render
from context_engine.types import LoreView, PackItem, Section, TrimEvent

IDENTITY_HEADER = "## Identity"
RULES_HEADER = "## Rules"
FROZEN_HEADER = "## World"
DIGEST_HEADER = "## Memory digest"
INPUT_HEADER = "## Your turn"
LORE_HEADER = "World Bible:"
NAMES_HEADER = "World Bible, names only (ask the DM for details):"


def identity_text(view: View) -> str:
    me = view.participant
    lines = [f"You are {me.role}, {KIND_NAMES.get(me.kind, me.kind)} in this campaign."]
    if me.identity.strip():
        lines.append(me.identity.strip())
    if view.omniscient:
        lines.append("You read the raw log: every turn, whisper, note and secret is shown.")
    if me.secret.strip():
        lines.append(f"Your secret (only you know it): {' '.join(me.secret.split())}")
    lines.append(FRAMING_NOTE)  # how turns are framed (issue 23): stable, so it caches
    return render(IDENTITY_HEADER, lines)


def rules_text(rules: str) -> str:
    return render(RULES_HEADER, [rules.strip()]) if rules.strip() else ""


def digest_text(view: View) -> str:
    lines: list[str] = []
    if view.digest is not None and view.digest.text.strip():
        d = view.digest
        lines.append(f"Campaign memory (rounds {d.round_from}-{d.round_to}):")
        lines.append(d.text.strip())
    if view.strategic_summary is not None and view.strategic_summary.text.strip():
        lines.append("Your strategic summary (your older private thoughts):")
        lines.append(view.strategic_summary.text.strip())
    return render(DIGEST_HEADER, lines)


def input_text(text: str, role: str, reminder: str = "") -> str:
    body = text.strip() or f"Continue the scene as {role}."
    return render(INPUT_HEADER, [reminder, body] if reminder else [body])


def base_lines(view: View, hook: str) -> tuple[list[str], list[PackItem]]:
    """Hook and bios: the never-cut part of the frozen section."""
    lines: list[str] = []
    items: list[PackItem] = []
    if hook.strip():
        line = f"Campaign hook: {hook.strip()}"
        lines.append(line)
        items.append(PackItem("hook", "hook", textops.count(line)))
    shown = [p for p in view.participants if view.omniscient or p.kind != "judge"]
    if shown:
        lines.append("Participants:")
    for p in shown:
        reveal = ""
        if p.role != view.role and not view.omniscient:
            reveal = f" (revealed after round {p.reveal_round})"
        secret = secret_visible(p, view) and p.role != view.role  # own secret: identity
        line = bio_line(p, secret, reveal)
        lines.append(line)
        items.append(PackItem("bio", f"participant:{p.role}", textops.count(line)))
    return lines, items


class LoreCandidate(NamedTuple):  # a named tuple, like `trimming.Line`: 60 a pack
    lore: LoreView
    line: str
    cost: int
    name: str
    name_cost: int


def lore_candidates(view: View) -> tuple[LoreCandidate, ...]:
    """The pack's lore as frozen-section candidates: the kept tuple itself (no caller
    changes it, and `frozen_section` keys its own cache by it)."""
    return _lore_candidates(view.lore)


# The frozen section's parts are memoised per process, as `ranking.make_query` is: they are
# pure functions of their arguments, and between two packs of one role they rarely change
# (the loader hands the engine the same lore views, `adapters.lore_view_row`), while each
# was built again in every pack (~0.1 ms for 60 lore entries' lines and counts, ~0.3 ms
# for the section's fit). Bounded like the engine's other caches.
FROZEN_CACHED = 256


@lru_cache(maxsize=FROZEN_CACHED)
def _lore_candidates(lore: tuple[LoreView, ...]) -> tuple[LoreCandidate, ...]:
    out = []
    for entry in lore:
        name, line = lore_name(entry), lore_line(entry)
        cost = lore_line_cost(entry, line)
        out.append(LoreCandidate(entry, line, cost, name, textops.count(name + ", ")))
    return tuple(out)


def named_lore_ids(candidates: Sequence[LoreCandidate], texts: Sequence[str]) -> frozenset[int]:
    """Ids of the lore whose term ``texts`` name as a whole word (any case): what
    `textops.mentions` finds in the texts joined by newlines.

    A term holds no newline (else the joined texts are searched), so no match spans two
    texts and a newline is a word's edge as a text's ends are: the joined search is the
    union of each text's. Each text's named terms are kept per list of terms, since the
    window's texts recur pack after pack (60 terms searched in a 40,000-character window
    were the engine's costliest line)."""
    terms = tuple(map(_TERM, candidates))
    if any("\n" in term for term in terms):
        joined = "\n".join(texts).lower()
        return frozenset(c.lore.id for c in candidates if textops.mentions(c.lore.term, joined))
    found = _NAMED.get(terms)
    if found is None:
        if len(_NAMED) >= NAMED_TERM_LISTS:
            _NAMED.clear()
        found = _NAMED[terms] = {}
    named: set[int] = set()
    for text in texts:
        positions = found.get(text)
        if positions is None:
            if len(found) >= NAMED_TEXTS:
                found.clear()
            lower = text.lower()
            positions = found[text] = tuple(
                i for i, term in enumerate(terms) if textops.mentions(term, lower)
            )
        named.update(positions)
    return frozenset(candidates[i].lore.id for i in named)


_TERM = attrgetter("lore.term")
# Per list of lore terms, per text: the positions of the terms the text names.
_NAMED: dict[tuple[str, ...], dict[str, tuple[int, ...]]] = {}
NAMED_TERM_LISTS = 64
NAMED_TEXTS = 8192


def frozen_need(view: View, hook: str, candidates: Sequence[LoreCandidate]) -> int:
    lines, _ = base_lines(view, hook)
    base = textops.count(render(FROZEN_HEADER, lines)) if lines else 0
    if candidates:
        base += textops.count(LORE_HEADER) + 1 + sum(c.cost for c in candidates)
        base += 0 if lines else textops.count(FROZEN_HEADER) + 1
    return base


def _rank(candidates: list[LoreCandidate], named: frozenset[int]) -> list[LoreCandidate]:
    return sorted(
        candidates,
        key=lambda c: (
            0 if c.lore.id in named else 1,
            -c.lore.last_seen_round,
            -c.lore.mention_count,
            c.lore.term.lower(),
            c.lore.id,
        ),
    )


def _frozen_text(base: list[str], full: list[LoreCandidate], names: list[LoreCandidate]) -> str:
    lines = list(base)
    if full:
        lines.append(LORE_HEADER)
        lines.extend(c.line for c in full)
    if names:
        lines.append(NAMES_HEADER + " " + ", ".join(c.name for c in names))
    return render(FROZEN_HEADER, lines)


def frozen_section(
    view: View,
    hook: str,
    budget: int,
    candidates: Sequence[LoreCandidate],
    named: frozenset[int],
) -> tuple[Section, list[TrimEvent], list[str], frozenset[int]]:
    """Fit the frozen section; returns it and the ids of lore given in full."""
    base, items = base_lines(view, hook)
    section, events, warnings, full_ids = _fit_frozen(
        tuple(base), tuple(items), budget, tuple(candidates), named
    )
    return section, list(events), list(warnings), full_ids


@lru_cache(maxsize=FROZEN_CACHED)
def _fit_frozen(
    base: tuple[str, ...],
    base_items: tuple[PackItem, ...],
    budget: int,
    candidates: tuple[LoreCandidate, ...],
    named: frozenset[int],
) -> tuple[Section, tuple[TrimEvent, ...], tuple[str, ...], frozenset[int]]:
    """`frozen_section` past its hook and bios (``base``, never cut, and their items)."""
    items = list(base_items)
    events: list[TrimEvent] = []
    warnings: list[str] = []
    ranked = _rank(candidates, named)
    base_cost = (
        textops.count(render(FROZEN_HEADER, base)) if base else (textops.count(FROZEN_HEADER) + 1)
    )
    names_left = sum(c.name_cost for c in ranked)
    names_header = textops.count(NAMES_HEADER) + 1
    used = base_cost
    full: list[LoreCandidate] = []
    for c in ranked:
        rest = names_left - c.name_cost
        header = 0 if full else textops.count(LORE_HEADER) + 1
        if used + header + c.cost + (names_header + rest if rest else 0) <= budget:
            full.append(c)
            used += header + c.cost
            names_left = rest
    full_ids = {c.lore.id for c in full}
    names = [c for c in ranked if c.lore.id not in full_ids]
    text = _frozen_text(base, full, names)
    total = textops.count_uncached(text)
    while total > budget and full:  # estimates were low: degrade the lowest-ranked
        full_ids.discard(full.pop().lore.id)
        names = [c for c in ranked if c.lore.id not in full_ids]
        text = _frozen_text(base, full, names)
        total = textops.count_uncached(text)
    for c in names:
        why = "named in the window or input, but " if c.lore.id in named else ""
        events.append(
            TrimEvent(
                "frozen",
                f"lore:{c.lore.id}",
                "degraded",
                f"{why}the frozen budget is full: names only",
                max(c.cost - c.name_cost, 0),
            )
        )
    items += [PackItem("lore", f"lore:{c.lore.id}", c.cost) for c in full]
    if total > budget and names:
        base_text = render(FROZEN_HEADER, base) if base else ""
        room = budget - textops.count(base_text) - 1
        names_line = NAMES_HEADER + " " + ", ".join(c.name for c in names)
        cut = tokens.truncate(names_line, room) if room > 0 else ""
        ends = [
            len(NAMES_HEADER) + 1 + len(", ".join(c.name for c in names[: i + 1]))
            for i in range(len(names))
        ]
        kept = [c for c, end in zip(names, ends, strict=True) if cut and end <= len(cut)]
        for c in names:
            if c not in kept:
                events.append(
                    TrimEvent(
                        "frozen",
                        f"lore:{c.lore.id}",
                        "dropped",
                        "hook and bios are never cut and leave no room even for this name",
                        c.name_cost,
                    )
                )
        if cut:
            text = render(FROZEN_HEADER, [*base, cut]) if base else render(FROZEN_HEADER, [cut])
        else:
            text = base_text
        total = textops.count_uncached(text)
        names = kept
    items += [PackItem("lore_name", f"lore:{c.lore.id}", c.name_cost) for c in names]
    if total > budget:
        warnings.append(
            f"frozen: hook and bios need {total} tokens, over the {budget}-token "
            "budget; they are never cut"
        )
    section = Section("frozen", budget, total, text, tuple(items), trimmed=bool(events))
    return section, tuple(events), tuple(warnings), frozenset(full_ids)
