"""``tiered``: hot / warm / cold bundles with per-tier budgets (SPEC §5.7, tiered seed).

- hot: identity, hook and profiles (bios: never compressed), the last
  ``HOT_ROUNDS`` rounds in full, the input with the sandwich reminder;
- warm: the WorldState snapshot and the older rounds of the hot window condensed to
  one line per turn;
- cold: rules, the digest, the World Bible (lore), passive retrieval.

Each tier has a token budget (``config.tier_budgets``, default 45% / 20% / 35% of the
total) on top of the section budgets: a part gets ``min(section room, tier room)``.
Fixed parts are reserved first (hot: identity, profiles, input; cold: rules, then the
digest), flexible parts share the rest (hot: full turns; warm: state, then condensed
turns; cold: lore, then retrieval).

Sandwich: the key instructions (who you are, your secret goal) open the pack in the
identity section and are repeated right before the input, at the end, where a long
prompt's "lost in the middle" effect cannot reach them. The reminder is the first
thing cut when the input section is full.
"""

from __future__ import annotations

from context_engine import retrieval, strain, textops, tokens
from context_engine import sections as secs
from context_engine.candidates import View
from context_engine.lines import KIND_NAMES, Entry, condensed_line
from context_engine.strategies.common import (
    Draft,
    apply_cut,
    retrieval_known,
    round_window,
    statics,
    window_start_event,
    window_texts,
)
from context_engine.trimming import (
    Line,
    assemble,
    entry_line,
    fixed_line,
    protected_refs,
    render,
    select,
)
from context_engine.trimming import simple_section as single
from context_engine.types import PackInput, PackItem, TrimEvent

HOT_ROUNDS = 2
DEFAULT_SHARES = (("hot", 45), ("warm", 20), ("cold", 35))
HEADER = "## Recent events"
WARM_LABEL = "Earlier in this scene (condensed):"
HOT_LABEL = "Now (in full):"
REMINDER_TOKENS = 80
WARM_WORDS = 20


def tier_budgets(inp: PackInput) -> dict[str, int]:
    configured = dict(inp.config.tier_budgets)
    if configured:
        return {name: max(configured.get(name, 0), 0) for name in ("hot", "warm", "cold")}
    total = inp.config.total_budget
    shares = {name: total * pct // 100 for name, pct in DEFAULT_SHARES}
    shares["hot"] += total - sum(shares.values())
    return shares


def reminder(view: View) -> str:
    me = view.participant
    parts = [f"Reminder: you are {me.role}, {KIND_NAMES.get(me.kind, me.kind)}."]
    if me.identity.strip():
        parts.append(textops.first_sentence(me.identity, 30))
    if me.secret.strip():
        parts.append(f"Your secret: {textops.first_sentence(me.secret, 25)}")
    text = " ".join(parts)
    return tokens.truncate(text, REMINDER_TOKENS)


def warm_line(entry: Entry) -> Line:
    text = condensed_line(entry, WARM_WORDS)
    cost = textops.count(text) + 1
    return Line(
        (1, entry.seq),
        text,
        PackItem("condensed", entry.ref, cost),
        cost,
        (0, entry.seq),
        "warm tier: the oldest condensed line goes first",
    )


def _input_section(inp: PackInput, view: View, budget: int):
    texts_without = secs.input_text(inp.input_text, view.role)
    room = budget - textops.count(texts_without) - 1
    note = reminder(view)
    events: list[TrimEvent] = []
    if textops.count(note) > room:
        note = tokens.truncate(note, room) if room > 8 else ""
        events.append(
            TrimEvent(
                "input",
                "reminder",
                "dropped" if not note else "truncated",
                "the sandwich reminder is cut before the input",
            )
        )
    section, more, warnings = single(
        "input", budget, secs.input_text(inp.input_text, view.role, note), "input", "input"
    )
    return section, events + more, warnings


def build(inp: PackInput, view: View) -> Draft:
    config = inp.config
    texts = statics(inp, view)
    tiers = tier_budgets(inp)
    draft = Draft(sections={})
    window, older = round_window(view, config.hot_window_rounds)
    draft.events += list(view.events)
    draft.events += window_start_event(
        older, view, f"round-{view.now - config.hot_window_rounds + 1}"
    )
    window, cut_events = apply_cut(window, view.cut, view)
    draft.events += cut_events
    protected = protected_refs(window, view.dm_roles)
    hot_from = view.now - HOT_ROUNDS + 1
    hot = [
        e for e in window if e.round >= hot_from or e.ref in protected or e.turn_kind == "monologue"
    ]
    hot_refs = {e.ref for e in hot}
    warm = [e for e in window if e.ref not in hot_refs]

    lore = secs.lore_candidates(view)
    named = secs.named_lore_ids(lore, window_texts(window, inp.input_text))
    query = retrieval.query_for(inp.input_text, view.turns, view.participants)
    in_window = {e.ref for e in window}
    known = retrieval_known(view)

    hits = retrieval.rank(
        query,
        config.retrieval_preset,
        [],
        list(texts.state.cold),
        view.retrieval_turns,
        known,
        in_window,
        view.pinned,
    )
    recent_full = textops.count(HEADER) + 1 + sum(e.cost for e in window) if window else 0
    draft.untrimmed = (
        textops.count(texts.identity)
        + textops.count(texts.rules)
        + secs.frozen_need(view, inp.hook, lore)
        + textops.count(texts.state.text)
        + textops.count(texts.digest)
        + recent_full
        + retrieval.need(hits)
        + textops.count(secs.input_text(inp.input_text, view.role, reminder(view)))
    )
    tier = strain.tier(draft.untrimmed, config.total_budget)
    draft.strain = tier
    draft.warnings += retrieval.pin_warnings(
        hits, len(view.pinned), draft.untrimmed, config.total_budget, config.budget("retrieval")
    )

    def run(result):
        section, events, warnings = result
        draft.events.extend(events)
        draft.warnings.extend(warnings)
        return section

    b = config.budget
    identity = run(single("identity", b("identity"), texts.identity, "identity", "identity"))
    inp_section = run(_input_section(inp, view, b("input")))
    base_lines, _ = secs.base_lines(view, inp.hook)
    base_cost = textops.count(render(secs.FROZEN_HEADER, base_lines)) if base_lines else 0
    hot_left = tiers["hot"] - identity.tokens - inp_section.tokens - base_cost

    rules = run(single("rules", min(b("rules"), tiers["cold"]), texts.rules, "rules", "rules"))
    cold_left = tiers["cold"] - rules.tokens
    digest = run(
        single("digest", max(min(b("digest"), cold_left), 0), texts.digest, "digest", "digest")
    )
    cold_left -= digest.tokens
    frozen_cap = min(b("frozen"), base_cost + max(cold_left, 0))
    frozen, f_events, f_warnings, full_ids = secs.frozen_section(
        view, inp.hook, frozen_cap, lore, named
    )
    draft.events += f_events
    draft.warnings += f_warnings
    cold_left -= max(frozen.tokens - base_cost, 0)

    state = run(
        single("state", max(min(b("state"), tiers["warm"]), 0), texts.state.text, "state", "state")
    )
    warm_left = tiers["warm"] - state.tokens

    recent_budget = b("recent")
    hot_lines = [entry_line(e, protected, order_group=3) for e in hot]
    if tier == "strain_3":
        hot_lines.append(fixed_line((4, 0), strain.NOTICE, "notice", "notice:strain_3"))
    label_cost = textops.count(HOT_LABEL) + 1
    hot_cap = max(min(recent_budget, hot_left), 0)
    kept_hot, _, hot_events = select("recent", hot_cap - label_cost, HEADER, hot_lines)
    draft.events += hot_events
    hot_used = textops.count(HEADER) + 1 + label_cost + sum(line.cost for line in kept_hot)
    warm_cap = max(min(recent_budget - hot_used, warm_left), 0)
    warm_lines = [warm_line(e) for e in warm]
    kept_warm, _, warm_events = select(
        "recent", warm_cap - (textops.count(WARM_LABEL) + 1), "", warm_lines
    )
    draft.events += warm_events
    for line in kept_warm:
        draft.events.append(
            TrimEvent(
                "recent",
                line.item.ref,
                "degraded",
                "warm tier: older rounds are condensed to one line",
                0,
                cause="window",
            )
        )
    lines = list(kept_hot) + list(kept_warm)
    if kept_warm:
        lines.append(fixed_line((0, 0), WARM_LABEL, "label", "label:warm"))
    if kept_hot:
        lines.append(fixed_line((2, 0), HOT_LABEL, "label", "label:hot"))
    recent = run(assemble("recent", recent_budget, HEADER, lines))

    rendered = {item.ref for item in recent.items}
    degraded = [c.lore for c in lore if c.lore.id not in full_ids]
    retrieval_budget = max(min(b("retrieval"), cold_left), 0)
    final_hits = retrieval.rank(
        query,
        config.retrieval_preset,
        degraded,
        list(texts.state.cold),
        view.retrieval_turns,
        known,
        rendered,
        view.pinned,
        retrieval_budget,
    )
    retrieved = run(retrieval.section("retrieval", retrieval_budget, final_hits))
    draft.sections = {
        "identity": identity,
        "rules": rules,
        "frozen": frozen,
        "state": state,
        "digest": digest,
        "recent": recent,
        "retrieval": retrieved,
        "input": inp_section,
    }
    return draft
