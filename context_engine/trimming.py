"""Deterministic, logged trimming (SPEC §5.1).

Recent window drop order, first to go → last to go (oldest first inside a class,
non-hinge turns before hinge turns and hinge anchors):

0. system chatter (``system`` turns, and content-free whisper stubs)
1. long narrative (``narrative`` over ``LONG_NARRATIVE_TOKENS``)
2. intel
3. short narrative
4. action
5. gm_note
6. whisper
7. monologue (the agent's own, already limited to the last two)
8. choice

The spec orders system → long narrative → intel → choice and is silent on the other
kinds. Players' actions and private exchanges are what the story *is* and what no
digest has yet, so they outlive intel and narration; the agent's own recent thoughts
and the DM's choices (the decision the agent must answer) go last. Never dropped by
trimming: the last DM ``choice`` in the window and the newest turn of the window (what
the agent is answering; the seed's "last input"), plus the input section itself. If
those alone overflow, the section is truncated with a warning like any section that
exceeds its cap on its own.
"""

from __future__ import annotations

from dataclasses import replace
from operator import itemgetter
from typing import NamedTuple

from context_engine import textops, tokens
from context_engine.lines import Entry
from context_engine.types import PackItem, Section, TrimEvent

LONG_NARRATIVE_TOKENS = 150

CLASS_REASONS = (
    "system chatter goes first",
    "long narrative goes before intel",
    "intel goes before actions and choices",
    "narrative goes before actions and choices",
    "actions go before private exchanges and choices",
    "GM notes go before whispers and choices",
    "whispers go before monologues and choices",
    "older private thoughts go before choices",
    "choices go last",
)
_KIND_CLASS = {
    "system": 0,
    "whisper_stub": 0,
    "intel": 2,
    "narrative": 3,
    "action": 4,
    "gm_note": 5,
    "whisper": 6,
    "monologue": 7,
    "choice": 8,
}


def drop_class(entry: Entry) -> int:
    if entry.turn_kind == "narrative" and entry.cost > LONG_NARRATIVE_TOKENS:
        return 1
    return _KIND_CLASS.get(entry.turn_kind, 4)


def protected_refs(entries: list[Entry], dm_roles: frozenset[str]) -> frozenset[str]:
    """The last DM choice and the newest readable turn: never dropped by trimming."""
    keep: set[str] = set()
    for entry in reversed(entries):
        if entry.item_kind != "stub":
            keep.add(entry.ref)
            break
    for entry in reversed(entries):
        if entry.turn_kind == "choice" and entry.speaker in dm_roles:
            keep.add(entry.ref)
            break
    return frozenset(keep)


class Line(NamedTuple):
    """One line of a section with where it renders and whether trimming may drop it.

    A named tuple, like `ranking.Posting`: a pack builds ~300 of them, and a tuple is
    built about three times faster than a frozen dataclass (measured: 0.27 vs 0.78 µs).
    """

    order: tuple  # render position (sorted ascending)
    text: str
    item: PackItem
    cost: int
    drop_key: tuple | None = None  # None: never dropped by trimming
    reason: str = ""


# A `Line`'s fields by position, read in C (a pack sorts, sums and lists ~600 lines).
_RENDER_ORDER = itemgetter(0)  # order
_TEXT = itemgetter(1)
_ITEM = itemgetter(2)
_COST = itemgetter(3)
_DROP_ORDER = itemgetter(4)  # drop_key: only for lines that have one


def entry_line(entry: Entry, protected: frozenset[str], order_group: int = 1) -> Line:
    cls = drop_class(entry)
    droppable = entry.ref not in protected
    return Line(
        order=(order_group, entry.seq),
        text=entry.line,
        item=entry.item,
        cost=entry.cost,
        drop_key=(1 if entry.hinge else 0, cls, entry.seq) if droppable else None,
        reason=CLASS_REASONS[cls] + (" (hinge turns go after non-hinges)" if entry.hinge else ""),
    )


def fixed_line(order: tuple, text: str, kind: str, ref: str) -> Line:
    cost = textops.count(text) + 1
    return Line(order=order, text=text, item=PackItem(kind, ref, cost), cost=cost)


def render(header: str, lines: list[str]) -> str:
    return header + "\n" + "\n".join(lines) if lines else ""


def select(
    name: str, budget: int, header: str, lines: list[Line]
) -> tuple[list[Line], list[Line], list[TrimEvent]]:
    """Drop droppable lines (by drop key) until the estimate fits ``budget``.

    Returns (kept lines, the remaining droppable lines in drop order, events).
    """
    events: list[TrimEvent] = []
    droppable = sorted([line for line in lines if line.drop_key is not None], key=_DROP_ORDER)
    total = (textops.count(header) + 1) + sum(map(_COST, lines))
    gone = 0  # the first `gone` of `droppable` are dropped
    while total > budget and gone < len(droppable):
        line = droppable[gone]
        gone += 1
        total -= line.cost
        events.append(_drop_event(name, budget, line))
    if not gone:
        return list(lines), droppable, events
    dropped = {id(line) for line in droppable[:gone]}
    kept = [line for line in lines if id(line) not in dropped]
    return kept, droppable[gone:], events


def _drop_event(name: str, budget: int, line: Line) -> TrimEvent:
    return TrimEvent(
        name, line.item.ref, "dropped", f"over the {budget}-token budget: {line.reason}", line.cost
    )


def assemble(
    name: str, budget: int, header: str, lines: list[Line]
) -> tuple[Section, list[TrimEvent], list[str]]:
    """Fit ``lines`` into ``budget``: drop droppable lines by their drop key, render
    in order, verify with one exact count, and truncate only as the last resort."""
    kept, droppable, events = select(name, budget, header, lines)
    while True:
        ordered, text, used = _rendered(header, kept)
        if used <= budget or not droppable:
            break
        line = droppable.pop(0)  # the estimate was low: drop one more and recount
        kept = [other for other in kept if other is not line]
        events.append(_drop_event(name, budget, line))
    section = Section(name, budget, used, text, tuple(map(_ITEM, ordered)))
    warnings: list[str] = []
    section = cap(section, events, warnings)
    return section, events, warnings


FILL_TRIES = 2  # exact recounts `assemble_filling` may spend on the room the estimate left


def assemble_filling(
    name: str, budget: int, header: str, lines: list[Line]
) -> tuple[Section, list[TrimEvent], list[str]]:
    """Like `assemble`, but the budget is spent as fully as the priority order allows.

    ``lines`` are in priority order, best first, and the droppable ones go lowest
    priority first (their drop keys say so). A droppable line that does not fit is
    skipped and the next one tried, as the Arena's floors fill (`arena.floors.fill`),
    instead of ending the section. The per-line estimates run a little high (a line's
    newline is counted on its own), so once the exact count is known, the room it leaves
    is offered to the skipped lines again, best first, each verified by a count (at most
    `FILL_TRIES`). Every line left out is in the trim log as dropped, with its reason.
    """
    fixed = [line for line in lines if line.drop_key is None]
    # Best first: the reverse of the drop order (a stable sort: ties keep their order).
    ranked = sorted(
        [line for line in lines if line.drop_key is not None], key=_DROP_ORDER, reverse=True
    )
    spent = textops.count(header) + 1 + sum(map(_COST, fixed))
    chosen: list[Line] = []
    skipped: list[Line] = []
    for line in ranked:
        if spent + line.cost <= budget:
            chosen.append(line)
            spent += line.cost
        else:
            skipped.append(line)
    while True:  # the estimate was low: drop the lowest-priority choice and recount
        ordered, text, used = _rendered(header, fixed + chosen)
        if used <= budget or not chosen:
            break
        skipped.insert(0, chosen.pop())
    tries = 0
    for line in _best_first(skipped):
        if tries >= FILL_TRIES or used >= budget:
            break
        if used + line.cost - 1 > budget:  # cannot fit even counted without its newline
            continue
        tries += 1
        trial = _rendered(header, fixed + chosen + [line])
        if trial[2] <= budget:
            chosen.append(line)
            skipped.remove(line)
            ordered, text, used = trial  # what was counted is the section: no second render
    events = [_drop_event(name, budget, line) for line in sorted(skipped, key=_drop_key)]
    section = Section(name, budget, used, text, tuple(map(_ITEM, ordered)))
    warnings: list[str] = []
    section = cap(section, events, warnings)
    return section, events, warnings


def _drop_key(line: Line) -> tuple:
    return line.drop_key or ()


def _best_first(lines) -> list[Line]:
    """The reverse of the drop order (a stable sort: ties keep their input order)."""
    return sorted(lines, key=_drop_key, reverse=True)


def _rendered(header: str, kept: list[Line]) -> tuple[list[Line], str, int]:
    """``kept`` in render order, the section's text, and its exact token count."""
    ordered = sorted(kept, key=_RENDER_ORDER)
    texts = list(map(_TEXT, ordered))
    # Counted from the lines it joins (`tokens.count_joined`): the same number.
    return ordered, render(header, texts), tokens.count_joined([header, *texts]) if texts else 0


def cap(section: Section, events: list[TrimEvent], warnings: list[str]) -> Section:
    """A section over its cap on its own is truncated, logged and warned about."""
    if section.tokens <= section.budget:
        return section
    cut = tokens.truncate(section.text, section.budget)
    used = textops.count_uncached(cut)
    events.append(
        TrimEvent(
            section.name,
            f"section:{section.name}",
            "truncated",
            f"{section.tokens} tokens exceed the {section.budget}-token cap on their own",
            section.tokens - used,
        )
    )
    warnings.append(
        f"{section.name}: {section.tokens} tokens exceed its {section.budget}-token cap on "
        f"their own; truncated to {used}"
    )
    return replace(section, text=cut, tokens=used, trimmed=True)


def simple_section(
    name: str, budget: int, text: str, kind: str, ref: str
) -> tuple[Section, list[TrimEvent], list[str]]:
    """A one-block section (identity, rules, state, digest, input): truncate if over."""
    used = textops.count(text) if text else 0
    items = (PackItem(kind, ref, used),) if text else ()
    events: list[TrimEvent] = []
    warnings: list[str] = []
    section = cap(Section(name, budget, used, text, items), events, warnings)
    return section, events, warnings


def cut_tail_keeping(
    name: str, budget: int, header: str, entries: list[Entry]
) -> tuple[Section, list[TrimEvent], list[str]]:
    """Hard cut for the ``full_history`` baseline: keep the newest lines that fit.

    The baseline does no selective trimming, but a hard cut that kept the *oldest*
    turns would be useless, so the cut drops whole lines from the start.
    """
    events: list[TrimEvent] = []
    warnings: list[str] = []
    lines = [entry.line for entry in entries]
    drop = min(textops.tail_lines_within(lines, budget, header), max(len(entries) - 1, 0))
    kept = entries[drop:]
    text = render(header, [entry.line for entry in kept])
    used = textops.count_uncached(text)
    while used > budget and len(kept) > 1:
        kept = kept[1:]
        drop += 1
        text = render(header, [entry.line for entry in kept])
        used = textops.count_uncached(text)
    items = tuple(e.item for e in kept)
    section = Section(name, budget, used, text, items)
    section = cap(section, events, warnings)  # the newest line alone is too long
    if drop:
        saved = sum(entry.cost for entry in entries[:drop])
        events.append(
            TrimEvent(
                name,
                f"turns:{entries[0].ref}..{entries[drop - 1].ref}",
                "truncated",
                f"hard cut: the oldest {drop} lines do not fit the {budget}-token budget",
                saved,
            )
        )
        warnings.append(
            f"{name}: full history exceeds its {budget}-token cap; the oldest {drop} lines were cut"
        )
    return section, events, warnings
