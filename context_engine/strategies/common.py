"""Pieces every strategy shares: the budget ledger, windows, command cuts, anchors.

Section budgets are shares, not walls (SPEC §5): with ``lend_unused_budget`` (the
default) every section that is not a borrower is built first, at its own budget, and
what it leaves unused joins a pool; then the strategy's borrowing plan runs in its one
fixed order (``layered``: the recent window at its own budget, retrieval with the pool,
the recent window again with what retrieval left). Every loan is logged and shown on the
section (`Section.borrowed`). Without lending each section keeps its own cap.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from operator import attrgetter

from context_engine import sections as secs
from context_engine import state as state_mod
from context_engine.candidates import View
from context_engine.commands import MIN_WINDOW_TURNS, Cut
from context_engine.lines import Entry, stub_entry, turn_entry
from context_engine.trimming import simple_section
from context_engine.types import PackInput, Section, TrimEvent, TurnView

SectionResult = tuple[Section, list[TrimEvent], list[str]]
Builder = Callable[[int], SectionResult]


@dataclass
class Draft:
    """What a strategy hands to `pack.build_pack`."""

    sections: dict[str, Section]
    events: list[TrimEvent] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    untrimmed: int = 0
    strain: str = "normal"


Step = tuple[str, bool]  # (section, borrows from the pool)


def build_sections(
    inp: PackInput,
    order: tuple[str, ...],
    builders: dict[str, Builder],
    draft: Draft,
    plan: tuple[Step, ...] = (),
) -> None:
    """Build every section: the ones outside ``plan`` first, in table order, at their own
    budgets; then ``plan``'s steps in order. With lending, a borrowing step's cap is what
    the section already holds (its own budget before its first build, its tokens after)
    plus the pool: the total budget less what every other section holds. A section's
    ``budget`` stays its own share; what it used beyond it is ``borrowed``. Absent
    sections are present but empty. Events land in table order."""
    lend = inp.config.lend_unused_budget
    planned = {name for name, _ in plan}
    built: dict[str, SectionResult] = {}
    offers: dict[str, int] = {}

    def run(name: str, cap: int) -> Section:
        if name in builders:
            built[name] = builders[name](cap)
        else:
            built[name] = (Section(name, cap, 0, ""), [], [])
        return built[name][0]

    def held(name: str) -> int:
        return built[name][0].tokens if name in built else inp.config.budget(name)

    for name in order:
        if name not in planned:
            run(name, inp.config.budget(name))
    for name, borrows in plan:
        own = inp.config.budget(name)
        pool = inp.config.total_budget - sum(held(other) for other in order)
        loan = max(pool, 0) if borrows and lend else 0
        if name in built and loan == 0:
            continue  # a second build with no more room would change nothing
        section = run(name, held(name) + loan)
        borrowed = max(section.tokens - own, 0)
        offered = section.budget - own
        built[name] = (replace(section, budget=own, borrowed=borrowed), *built[name][1:])
        offers[name] = max(offered, 0)
    for name in order:
        section, events, warnings = built[name]
        if section.borrowed:
            events = [
                TrimEvent(
                    name,
                    f"budget:{name}",
                    "borrowed",
                    f"used {section.borrowed} tokens beyond its own share of "
                    f"{section.budget}, of {offers[name]} that other sections left unused "
                    f"(lent in the fixed order {' → '.join(n for n, b in plan if b)})",
                    section.borrowed,
                    cause="lending",
                ),
                *events,
            ]
        draft.events.extend(events)
        draft.warnings.extend(warnings)
        draft.sections[name] = section


def block(name: str, text: str, kind: str) -> Builder:
    return lambda budget: simple_section(name, budget, text, kind, name)


@dataclass(frozen=True)
class Statics:
    """The single-block texts, rendered once per pack."""

    identity: str
    rules: str
    digest: str
    input: str
    state: state_mod.StateSnapshot


def statics(inp: PackInput, view: View, *, prune_state: bool = True, reminder: str = "") -> Statics:
    return Statics(
        identity=secs.identity_text(view),
        rules=secs.rules_text(inp.rules),
        digest=secs.digest_text(view),
        input=secs.input_text(inp.input_text, view.role, reminder),
        state=state_mod.snapshot(
            inp.world_state.flags, view.state_fields, view.now, prune=prune_state
        ),
    )


_ENTRY_ORDER = attrgetter("seq", "ref")


def _pinned(turn: TurnView, view: View) -> bool:
    """The agent's own last monologues: kept regardless of window and cuts."""
    return turn.kind == "monologue" and not view.omniscient


def round_window(view: View, rounds: int) -> tuple[list[Entry], list[TurnView]]:
    """Entries of the last ``rounds`` rounds (plus own pinned monologues); older turns."""
    start = view.now - rounds + 1
    window: list[Entry] = []
    older: list[TurnView] = []
    for turn in view.turns:
        if turn.round >= start or _pinned(turn, view):
            window.append(turn_entry(turn))
        else:
            older.append(turn)
    window += [stub_entry(t) for t in view.stubs if t.round >= start]
    window.sort(key=_ENTRY_ORDER)
    return window, older


def last_window(view: View, count: int) -> tuple[list[Entry], list[TurnView]]:
    """The last ``count`` transcript turns, plus own monologues and stubs in that span.

    Own monologues and whisper stubs ride along inside the span instead of using up
    its slots, so the window counts exactly what the loader's "last N visible turns
    (not the role's own monologues)" counts (`HistoryNeeds.last_turns`).
    """
    core = [t for t in view.turns if not _pinned(t, view)]
    chosen = core[-count:] if count > 0 else []
    start = chosen[0].seq if chosen else None
    if start is None:
        return [], list(core)

    def inside(turn: TurnView) -> bool:
        return turn.seq >= start

    window = [turn_entry(t) for t in chosen]
    window += [turn_entry(t) for t in view.turns if _pinned(t, view) and inside(t)]
    window += [stub_entry(t) for t in view.stubs if inside(t)]
    window.sort(key=_ENTRY_ORDER)
    older = core[: len(core) - len(chosen)]
    return window, older


def window_start_event(older: list[TurnView], view: View, label: str) -> list[TrimEvent]:
    """One aggregated log line for candidate turns older than the window."""
    if not older:
        return []
    action = "summarised" if view.digest is not None else "dropped"
    where = "covered by the digest" if view.digest is not None else "no digest covers them"
    return [
        TrimEvent(
            "recent",
            f"turns:before-{label}",
            action,
            f"{len(older)} turns older than the window ({where})",
            cause="window",
        )
    ]


def apply_cut(
    window: list[Entry], cut: Cut | None, view: View
) -> tuple[list[Entry], list[TrimEvent]]:
    """/checkpoint or /clear: turns up to the cut leave, except the minimum window."""
    if cut is None:
        return window, []
    tail = {e.ref for e in window[-MIN_WINDOW_TURNS:]}
    kept: list[Entry] = []
    events: list[TrimEvent] = []
    action = "summarised" if cut.command == "checkpoint" else "dropped"
    for entry in window:
        pinned = entry.turn_kind == "monologue" and not view.omniscient
        if entry.seq > cut.seq or entry.ref in tail or pinned:
            kept.append(entry)
        else:
            events.append(
                TrimEvent("recent", entry.ref, action, cut.reason, entry.cost, cause="window")
            )
    return kept, events


def hinge_anchors(
    view: View, older: list[TurnView], quota: int, ttl: int, cut: Cut | None
) -> tuple[list[Entry], list[TrimEvent]]:
    """Hinge turns older than the window, kept as anchors: newest ``quota`` within TTL."""
    events: list[TrimEvent] = []
    live: list[TurnView] = []
    expired = 0
    for turn in older:
        if not turn.hinge:
            continue
        if cut is not None and turn.seq <= cut.seq:
            action = "summarised" if cut.command == "checkpoint" else "dropped"
            events.append(
                TrimEvent("recent", f"turn:{turn.id}", action, cut.reason, cause="window")
            )
        elif view.now - turn.round > ttl:
            expired += 1
        else:
            live.append(turn)
    if expired:
        events.append(
            TrimEvent(
                "recent",
                "hinges:expired",
                "dropped",
                f"{expired} hinge turns older than the {ttl}-round TTL",
                cause="window",
            )
        )
    chosen = live[-quota:] if quota > 0 else []
    for turn in live[: len(live) - len(chosen)]:
        events.append(
            TrimEvent(
                "recent",
                f"turn:{turn.id}",
                "dropped",
                f"hinge quota of {quota} anchors reached: older hinges go first",
                cause="window",
            )
        )
    return [turn_entry(t, "anchor") for t in chosen], events


def retrieval_known(view: View) -> list[TurnView]:
    """Every readable turn the pack was given that retrieval may use as a hit's
    neighbour: the loaded turns, the ranked hits and their neighbours; no monologues
    except for judges (an agent's own monologue reaches retrieval only as a ranked hit,
    `View.retrieval_turns`, never as the exchange around another hit)."""
    turns = (*view.turns, *view.retrieval_turns, *view.retrieval_context)
    return [t for t in turns if view.omniscient or t.kind != "monologue"]


def window_texts(entries: list[Entry], input_text: str) -> list[str]:
    """The texts the window's lore names are looked for in (`sections.named_lore_ids`)."""
    return [*(e.content for e in entries), input_text]
