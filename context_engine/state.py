"""WorldState snapshot with hot / warm / cold pruning (SPEC §5.6).

A field's age is ``now - last_mutated_round``:

- hot (age <= 1: mutated in the last 2 rounds): full value, with its mutation count;
- warm (2 <= age <= 10): condensed to its first sentence (at most 12 words). The spec
  names "warm: last 5" and "cold: untouched for more than 10"; fields in between stay
  condensed rather than archived early, so nothing vanishes before the cold cut-off;
- cold (age > 10): archived. Only the names are listed; the values are reachable
  through retrieval (`retrieval.py` matches them against the input).

Ordering inside a tier is by recency, then mutation count (volatile fields first),
then name, so the snapshot is deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass

from context_engine import textops
from context_engine.types import StateFieldView

HOT_MAX_AGE = 1
WARM_MAX_AGE = 10
WARM_WORDS = 12
HEADER = "## World state"


@dataclass(frozen=True)
class StateSnapshot:
    text: str  # "" when there is nothing to show
    hot: tuple[str, ...]
    warm: tuple[str, ...]
    cold: tuple[StateFieldView, ...]


def tier(field: StateFieldView, now: int) -> str:
    age = now - field.last_mutated_round
    if age <= HOT_MAX_AGE:
        return "hot"
    if age <= WARM_MAX_AGE:
        return "warm"
    return "cold"


def _order(field: StateFieldView) -> tuple:
    return (-field.last_mutated_round, -field.mutations, field.name)


def field_line(field: StateFieldView) -> str:
    value = " ".join(field.value.split())
    changed = f"changed {field.mutations}x, last in round {field.last_mutated_round}"
    return f"- {field.name}: {value} ({changed})"


def snapshot(
    flags: tuple[tuple[str, bool], ...],
    fields: tuple[StateFieldView, ...],
    now: int,
    *,
    prune: bool = True,
) -> StateSnapshot:
    """Render the state for one reader. ``prune=False`` shows every field in full
    (the ``full_history`` baseline)."""
    ordered = sorted(fields, key=_order)
    hot: list[str] = []
    warm: list[str] = []
    cold: list[StateFieldView] = []
    for field in ordered:
        where = tier(field, now) if prune else "hot"
        if where == "hot":
            hot.append(field_line(field))
        elif where == "warm":
            hot_value = textops.first_sentence(field.value, WARM_WORDS)
            warm.append(f"- {field.name}: {hot_value}")
        else:
            cold.append(field)
    lines: list[str] = []
    if flags:
        shown = ", ".join(f"{name}={'yes' if value else 'no'}" for name, value in sorted(flags))
        lines.append(f"Flags: {shown}")
    if hot:
        lines.append("Current (recently changed):")
        lines.extend(hot)
    if warm:
        lines.append("Earlier (condensed):")
        lines.extend(warm)
    if cold:
        names = ", ".join(field.name for field in sorted(cold, key=lambda f: f.name))
        lines.append(f"Archived (unchanged for over {WARM_MAX_AGE} rounds): {names}")
    text = f"{HEADER} (round {now})\n" + "\n".join(lines) if lines else ""
    return StateSnapshot(text=text, hot=tuple(hot), warm=tuple(warm), cold=tuple(cold))
