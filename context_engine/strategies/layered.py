"""``layered`` (SPEC option D, the default): every section, every rule of §5.1–§5.8.

Order of work: gather the untrimmed need of every section → pressure → strain tier →
apply the tier's effects to the window and retrieval → build the sections in table
order within their budgets (the digest may borrow from the transcript at Strain III).
"""

from __future__ import annotations

from functools import lru_cache

from context_engine import retrieval, strain, textops, tokens
from context_engine import sections as secs
from context_engine.candidates import View
from context_engine.commands import lending_turns
from context_engine.lines import Entry, turn_entry
from context_engine.strategies.common import (
    Draft,
    Statics,
    apply_cut,
    block,
    build_sections,
    hinge_anchors,
    retrieval_known,
    round_window,
    statics,
    window_start_event,
    window_texts,
)
from context_engine.trimming import Line, assemble, entry_line, fixed_line, protected_refs
from context_engine.types import SECTION_NAMES, PackInput, TrimEvent, TurnView

RECENT_HEADER = "## Recent events"
SHIFT_DIVISOR = 4  # of what Strain III frees in the window, the digest may take this share
# (all it lacks, or nothing: see `build`)


def recent_need(window: list[Entry], anchors: list[Entry]) -> int:
    if not window and not anchors:
        return 0
    return textops.count(RECENT_HEADER) + 1 + sum(e.cost for e in window + anchors)


def apply_strain(
    tier: str, window: list[Entry], anchors: list[Entry], protected: frozenset[str]
) -> tuple[list[Entry], list[Entry], list[Entry], list[TrimEvent]]:
    """Tier effects on the window: (window, anchors, recapped entries, events)."""
    events: list[TrimEvent] = []
    recapped: list[Entry] = []
    if tier == "strain_1":
        losers = [e for e in window if e.ref not in protected][: strain.STRAIN1_WINDOW_CUT]
        for e in losers:
            events.append(
                TrimEvent(
                    "recent",
                    e.ref,
                    "dropped",
                    "strain_1: the window loses its 2 oldest turns",
                    e.cost,
                    cause="strain",
                )
            )
        gone = {e.ref for e in losers}
        window = [e for e in window if e.ref not in gone]
    elif tier == "strain_2":
        older_half = window[: len(window) // 2]
        recapped = [e for e in older_half if e.ref not in protected]
        for e in recapped:
            events.append(
                TrimEvent(
                    "recent",
                    e.ref,
                    "summarised",
                    "strain_2: the older half of the window became the scene recap",
                    e.cost,
                    cause="strain",
                )
            )
        gone = {e.ref for e in recapped}
        window = [e for e in window if e.ref not in gone]
    elif tier == "strain_3":
        keep = {e.ref for e in window[-strain.STRAIN3_WINDOW :]} | protected
        for e in window:
            if e.ref not in keep:
                events.append(
                    TrimEvent(
                        "recent",
                        e.ref,
                        "dropped",
                        f"strain_3: the window is the last {strain.STRAIN3_WINDOW} turns",
                        e.cost,
                        cause="strain",
                    )
                )
        for e in anchors:
            events.append(
                TrimEvent(
                    "recent",
                    e.ref,
                    "dropped",
                    "strain_3: anchors leave; the digest holds the Hinge Index",
                    e.cost,
                    cause="strain",
                )
            )
        window = [e for e in window if e.ref in keep]
        anchors = []
    return window, anchors, recapped, events


def recent_builder(
    tier: str,
    window: list[Entry],
    anchors: list[Entry],
    recapped: list[Entry],
    protected: frozenset[str],
    extension: list[Line],
    retrieved: set[str],
):
    """The recent section: anchors, scene recap, window, engine notice (in that order).

    Built twice when lending gives it more room after retrieval (`build_sections`): the
    second build leaves out what retrieval showed and may reach back before the window
    (``extension``: older loaded turns, newest kept first, dropped before anything else).
    """

    def build(budget: int):
        lines = [entry_line(e, protected, order_group=0) for e in anchors if e.ref not in retrieved]
        lines += [line for line in extension if line.item.ref not in retrieved]
        events: list[TrimEvent] = []
        recap = strain.scene_recap(recapped)
        if recap:
            share = max(budget // strain.RECAP_SHARE, 0)
            if textops.count(recap) > share:
                recap = tokens.truncate(recap, share - 1) + "…" if share > 1 else ""
                events.append(
                    TrimEvent(
                        "recent",
                        "recap",
                        "truncated",
                        f"scene recap capped at 1/{strain.RECAP_SHARE} of the recent budget",
                    )
                )
            if recap:
                lines.append(fixed_line((1, 0), recap, "recap", "recap"))
        shown = [e for e in window if e.ref not in retrieved]
        if tier == "strain_3":
            # Of the last 6, the 2 oldest go first when the digest needs the room.
            soft = {e.ref for e in shown[: max(len(shown) - strain.STRAIN3_MIN_WINDOW, 0)]}
            for e in shown:
                line = entry_line(e, protected, order_group=2)
                if line.drop_key is not None and e.ref in soft:
                    line = Line(
                        line.order,
                        line.text,
                        line.item,
                        line.cost,
                        (-1, *line.drop_key),
                        f"strain_3: the window shrinks to {strain.STRAIN3_MIN_WINDOW} turns first",
                    )
                lines.append(line)
            lines.append(fixed_line((3, 0), strain.NOTICE, "notice", "notice:strain_3"))
        else:
            lines += [entry_line(e, protected, order_group=2) for e in shown]
        section, more, warnings = assemble("recent", budget, RECENT_HEADER, lines)
        return section, events + more, warnings

    return build


def extension_lines(view: View, in_window: set[str], tier: str, reach: int) -> list[Line]:
    """Turns outside the window that the recent window may reach back to with lent room:
    among the last ``reach`` transcript turns (`commands.lending_turns`, what the loader
    reads), never what a /checkpoint or /clear cut (what they cut stays out of the
    window; ranked retrieval still finds it), no monologues or hinge anchors, and only
    below Strain II (a strained window stays short). As lines, dropped oldest first."""
    if tier not in ("normal", "strain_1") or reach <= 0:
        return []
    cut = view.cut.seq if view.cut is not None else None
    transcript = [t for t in view.turns if view.omniscient or t.kind != "monologue"]
    return [
        line
        for line in map(_lent_line, transcript[-reach:])
        if line is not None
        and line.item.ref not in in_window
        and (cut is None or line.order[1] > cut)  # order: (0, the turn's seq)
    ]


@lru_cache(maxsize=32768)
def _lent_line(turn: TurnView) -> Line | None:
    """A turn's line in the window's lent room (None for a monologue or a hinge turn),
    kept per turn as `turn_entry` is: a pack offers ~140 of them, the same as the last
    pack's but one."""
    if turn.kind == "monologue" or turn.hinge:
        return None
    e = turn_entry(turn)
    return Line(
        (0, e.seq),
        e.line,
        e.item,
        e.cost,
        (-2, e.seq),
        "lent room: older turns before the window, oldest first",
    )


def build(inp: PackInput, view: View) -> Draft:
    config = inp.config
    texts: Statics = statics(inp, view)
    window, older = round_window(view, config.hot_window_rounds)
    draft = Draft(sections={})
    draft.events += list(view.events)
    draft.events += window_start_event(
        older, view, f"round-{view.now - config.hot_window_rounds + 1}"
    )
    window, cut_events = apply_cut(window, view.cut, view)
    draft.events += cut_events
    anchors, anchor_events = hinge_anchors(
        view, older, config.hinge_quota, config.hinge_ttl_rounds, view.cut
    )
    draft.events += anchor_events
    protected = protected_refs(window, view.dm_roles)

    lore = secs.lore_candidates(view)
    named = secs.named_lore_ids(lore, window_texts(window, inp.input_text))
    query = retrieval.query_for(inp.input_text, view.turns, view.participants)
    known = retrieval_known(view)

    def ranked(degraded: list, exclude: set[str], pinned, hits=view.retrieval_turns, budget=None):
        return retrieval.rank(
            query,
            config.retrieval_preset,
            degraded,
            list(texts.state.cold),
            hits,
            known,
            exclude,
            pinned,
            budget,
        )

    # Pressure (SPEC §5.2): what the pack needs once the transcript is trimmed (window,
    # cuts, anchors); passive retrieval is filler that lending sizes, so only the role's
    # own pinned results count.
    pinned_hits = ranked([], set(), view.pinned, hits=())
    untrimmed = (
        textops.count(texts.identity)
        + textops.count(texts.rules)
        + secs.frozen_need(view, inp.hook, lore)
        + textops.count(texts.state.text)
        + textops.count(texts.digest)
        + recent_need(window, anchors)
        + retrieval.need(pinned_hits)
        + textops.count(texts.input)
    )
    tier = strain.tier(untrimmed, config.total_budget)
    draft.untrimmed, draft.strain = untrimmed, tier
    draft.warnings += retrieval.pin_warnings(
        pinned_hits, len(pinned_hits), untrimmed, config.total_budget, config.budget("retrieval")
    )
    window, anchors, recapped, strain_events = apply_strain(tier, window, anchors, protected)
    draft.events += strain_events

    budgets_shift = 0
    digest_tokens = textops.count(texts.digest)
    if tier == "strain_3" and digest_tokens > config.budget("digest"):
        floor = (
            textops.count(RECENT_HEADER)
            + 1
            + textops.count(strain.NOTICE)
            + 1
            + sum(e.cost for e in window[-strain.STRAIN3_MIN_WINDOW :])
            + sum(e.cost for e in window if e.ref in protected)
        )
        # What the shrunken window frees is shared: up to a quarter may go to the digest,
        # the rest stays in the pool that ranked retrieval borrows from. The digest takes
        # its part only when that makes it whole: a loan that leaves it truncated would
        # only lengthen the tail of its chronological facts, while ranked retrieval picks
        # the older turns this input needs (measured on LoCoMo, README).
        freed = config.budget("recent") - floor
        overflow = digest_tokens - config.budget("digest")
        budgets_shift = overflow if 0 < overflow <= freed // SHIFT_DIVISOR else 0
        if budgets_shift:
            draft.events.append(
                TrimEvent(
                    "recent",
                    "budget:recent",
                    "lent",
                    f"strain_3: digest prioritised, {budgets_shift} "
                    "tokens of the recent budget lent to the digest",
                    budgets_shift,
                    cause="strain",
                )
            )

    full_ids: set[int] = set()
    in_recent: set[str] = set()
    retrieved: set[str] = set()
    after_retrieval = [False]  # the recent window's second build comes after retrieval
    extension = extension_lines(view, {e.ref for e in window}, tier, lending_turns(config))

    def frozen(budget: int):
        section, events, warnings, ids = secs.frozen_section(view, inp.hook, budget, lore, named)
        full_ids.update(ids)
        return section, events, warnings

    def recent(budget: int):
        second = after_retrieval[0]
        build_recent = recent_builder(
            tier, window, anchors, recapped, protected, extension if second else [], retrieved
        )
        result = build_recent(budget - (0 if second else budgets_shift))
        in_recent.update(item.ref for item in result[0].items)
        return result

    def retrieval_builder(budget: int):
        degraded = [c.lore for c in lore if c.lore.id not in full_ids]
        hits = ranked(degraded, in_recent, view.pinned, budget=budget)
        result = retrieval.section("retrieval", budget, hits)
        retrieved.update(item.ref for item in result[0].items if item.kind == "turn")
        after_retrieval[0] = True
        return result

    digest_block = block("digest", texts.digest, "digest")
    builders = {
        "identity": block("identity", texts.identity, "identity"),
        "rules": block("rules", texts.rules, "rules"),
        "frozen": frozen,
        "state": block("state", texts.state.text, "state"),
        "digest": lambda budget: digest_block(budget + budgets_shift),
        "recent": recent,
        "retrieval": retrieval_builder,
        "input": block("input", texts.input, "input"),
    }
    plan = (("recent", False), ("retrieval", True), ("recent", True))
    build_sections(inp, SECTION_NAMES, builders, draft, plan)
    return draft
