"""One Arena run: every strategy × budget × checkpoint × role, judged, summarised.

Metrics per (strategy, budget):

- ``retention``: retained ÷ entitled over (role, checkpoint, fact) where the fact was
  introduced by the checkpoint and the role may read it (1.0 when nothing is owed);
- ``hinge_retention``: the same over hinge facts (id starting with ``hinge``);
- ``mean_tokens`` / ``max_tokens``: pack sizes; ``build_ms_median``: `build_pack` time
  (the only field that varies between identical runs; pass ``clock`` to pin it);
- ``leaks``: (role, checkpoint, fact) where a fact with an audience was introduced, the
  role is outside that audience, is not entitled at that checkpoint to another fact
  with the same answer (a secret revealed later is public knowledge, not a leak), and
  every answer string is in its pack.

With ``questions`` (`recall`), each row also has ``evidence_recall`` (the headline),
``evidence_by_category``, ``evidence_tokens`` (mean tokens of the question packs) and
``evidence_pairs``; ``floors`` holds the ``recency`` and ``bm25`` rows at every budget.

``full_history_tokens`` is the mean, over the roles, of the untrimmed full-history pack
at the last checkpoint. ``recommended`` (`recommend`) has 0 leaks and, when questions
exist, evidence recall no lower than the ``bm25`` floor at its budget; among those the
highest evidence recall, then retention, ties to fewer mean tokens (then strategy name,
then budget, for determinism); None when no configuration qualifies.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from context_engine.arena.facts import FactView, entitled, is_hinge_fact
from context_engine.arena.judge import OfflineJudge, offline_known, pack_hash
from context_engine.arena.recall import QuestionView, asks_for, score_questions
from context_engine.arena.replay import Replay, scaled_config
from context_engine.pack import build_pack
from context_engine.types import STRATEGIES, Pack

DEFAULT_BUDGETS = (4000, 8000, 13000)
DEFAULT_EVERY = 10
FULL_HISTORY_BUDGET = 1_000_000_000


@dataclass(frozen=True)
class ArenaOptions:
    strategies: tuple[str, ...] = STRATEGIES
    budgets: tuple[int, ...] = DEFAULT_BUDGETS
    every: int = DEFAULT_EVERY
    roles: tuple[str, ...] = ()  # empty: every role

    def validate(self, roles: Sequence[str]) -> None:
        for strategy in self.strategies:
            if strategy not in STRATEGIES:
                raise ValueError(
                    f"strategies: unknown strategy {strategy!r}; choose from "
                    f"{', '.join(STRATEGIES)}."
                )
        if not self.strategies:
            raise ValueError("strategies: name at least one strategy.")
        if not self.budgets or any(b < 1 for b in self.budgets):
            raise ValueError("budgets: give one or more positive token budgets.")
        if self.every < 1:
            raise ValueError("every: must be at least 1.")
        unknown = sorted(set(self.roles) - set(roles))
        if unknown:
            raise ValueError(f"roles: unknown role {unknown[0]!r}; roles are: {', '.join(roles)}.")


def checkpoints_for(last_round: int, every: int) -> list[int]:
    """Every ``every`` rounds, and the last round."""
    points = list(range(every, last_round + 1, every))
    if not points or points[-1] != last_round:
        points.append(last_round)
    return points


def pack_text(pack: Pack) -> str:
    return "\n\n".join(section.text for section in pack.sections if section.text)


@dataclass
class _Tally:
    entitled: int = 0
    retained: int = 0
    hinge_entitled: int = 0
    hinge_retained: int = 0
    leaks: int = 0

    def __post_init__(self) -> None:
        self.tokens: list[int] = []
        self.build_ms: list[float] = []
        self.by_checkpoint: dict[int, list[int]] = {}
        # role -> [entitled, retained, hinge entitled, hinge retained, leaks]
        self.by_role: dict[str, list[int]] = {}


def _ratio(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 1.0


def below_floor(row: dict, floors: Sequence[dict]) -> bool:
    """Is ``row``'s evidence recall under the ``bm25`` floor at its budget?"""
    floor = next(
        (f for f in floors if f["strategy"] == "bm25" and f["budget"] == row["budget"]), None
    )
    if floor is None or floor.get("evidence_recall") is None:
        return False
    return (row.get("evidence_recall") or 0.0) < floor["evidence_recall"]


def recommend(results: Sequence[dict], floors: Sequence[dict] = ()) -> dict | None:
    """The best configuration with no leak and, when questions exist, not below ``bm25``."""
    safe = [r for r in results if r["leaks"] == 0 and not below_floor(r, floors)]
    if not safe:
        return None
    best = min(
        safe,
        key=lambda r: (
            -(r.get("evidence_recall") or 0.0),
            -r["retention"],
            r["mean_tokens"],
            r["strategy"],
            r["budget"],
        ),
    )
    return {"strategy": best["strategy"], "budget": best["budget"]}


def run_arena(
    replay: Replay,
    facts: Sequence[FactView],
    options: ArenaOptions = ArenaOptions(),
    *,
    questions: Sequence[QuestionView] = (),
    judge=None,
    clock: Callable[[], float] = time.perf_counter,
    progress: Callable[[int, int, str], None] | None = None,
    experiment: int | None = None,
    leak_probe: Callable[[Pack, str, int], Pack] | None = None,
) -> tuple[dict, dict]:
    """(report, details): the report in the ``--json`` shape; details hold the judge's
    note, the per-checkpoint retention series (for the plot) and counts.

    ``leak_probe`` lets tests fault-inject a leaking strategy: it may replace each pack
    before it is judged.
    """
    judge = judge or OfflineJudge()
    options.validate(replay.roles)
    roles = options.roles or replay.roles
    omniscient = {p.role: p.kind == "judge" for p in replay.participants}
    last = replay.history.last_round
    checkpoints = checkpoints_for(last, options.every)
    asks = asks_for(replay, questions, roles)
    replay.prepare(sorted({*checkpoints, *(a.question.asked_at_round for a in asks)}))
    facts = sorted(facts, key=lambda f: f.id)
    base = replay.history.config
    configs = [
        (strategy, budget, scaled_config(base, strategy=strategy, total=budget))
        for strategy in options.strategies
        for budget in options.budgets
    ]
    tallies = {(s, b): _Tally() for s, b, _ in configs}
    fact_packs = len(checkpoints) * len(roles) * len(configs)
    total = fact_packs + len(asks) * len(configs)
    done = 0
    for checkpoint in checkpoints:
        introduced = [f for f in facts if f.round <= checkpoint]
        for role in roles:
            sees_all = omniscient[role]
            owed = [f for f in introduced if entitled(f, role, omniscient=sees_all)]
            owed_ids = {f.id for f in owed}
            legit = {f.answer_key for f in owed}
            foreign = [f for f in introduced if f.id not in owed_ids and f.answer_key not in legit]
            for strategy, budget, config in configs:
                inp = replay.pack_input(checkpoint, role, config)
                started = clock()
                pack = build_pack(inp)
                elapsed = (clock() - started) * 1000
                if leak_probe is not None:
                    pack = leak_probe(pack, role, checkpoint)
                text = pack_text(pack)
                lower = text.lower()
                digest = pack_hash(text)
                tally = tallies[(strategy, budget)]
                tally.tokens.append(pack.total_tokens)
                tally.build_ms.append(elapsed)
                row = tally.by_checkpoint.setdefault(checkpoint, [0, 0])
                mine = tally.by_role.setdefault(role, [0, 0, 0, 0, 0])
                for fact in owed:
                    kept = judge.known(text, lower, digest, fact)
                    tally.entitled += 1
                    tally.retained += kept
                    row[0] += 1
                    row[1] += kept
                    mine[0] += 1
                    mine[1] += kept
                    if is_hinge_fact(fact):
                        tally.hinge_entitled += 1
                        tally.hinge_retained += kept
                        mine[2] += 1
                        mine[3] += kept
                leaks = sum(1 for f in foreign if offline_known(lower, f))
                tally.leaks += leaks
                mine[4] += leaks
                done += 1
                if progress is not None and done % 25 == 0:
                    progress(done, total, f"round {checkpoint}, {role}, {strategy} @ {budget}")
    recalls, floor_tallies = score_questions(
        replay,
        asks,
        configs,
        clock=clock,
        progress=None
        if progress is None
        else lambda d, _t, label: progress(d + done, total, label),
    )
    full_tokens = []
    full_config = scaled_config(base, strategy="full_history", total=FULL_HISTORY_BUDGET)
    for role in roles:
        full_tokens.append(build_pack(replay.pack_input(last, role, full_config)).total_tokens)
    results = []
    series = []
    for strategy, budget, _ in configs:
        t = tallies[(strategy, budget)]
        results.append(
            {
                "strategy": strategy,
                "budget": budget,
                "retention": _ratio(t.retained, t.entitled),
                "hinge_retention": _ratio(t.hinge_retained, t.hinge_entitled),
                "mean_tokens": round(statistics.fmean(t.tokens), 1) if t.tokens else 0.0,
                "max_tokens": max(t.tokens, default=0),
                "build_ms_median": round(statistics.median(t.build_ms), 3) if t.build_ms else 0.0,
                "leaks": t.leaks,
                **(recalls[(strategy, budget)].as_dict() if asks else {}),
            }
        )
        series.append(
            {
                "strategy": strategy,
                "budget": budget,
                "retention_by_checkpoint": [
                    _ratio(t.by_checkpoint.get(c, [0, 0])[1], t.by_checkpoint.get(c, [0, 0])[0])
                    for c in checkpoints
                ],
                "entitled": t.entitled,
                "retained": t.retained,
                "by_role": {
                    role: {
                        "retention": _ratio(v[1], v[0]),
                        "hinge_retention": _ratio(v[3], v[2]),
                        "entitled": v[0],
                        "leaks": v[4],
                    }
                    for role, v in sorted(t.by_role.items())
                },
            }
        )
    floors = (
        [{"strategy": name, "budget": b, **t.as_dict()} for (name, b), t in floor_tallies.items()]
        if asks
        else []
    )
    report = {
        "experiment": experiment,
        "checkpoints": checkpoints,
        "full_history_tokens": round(statistics.fmean(full_tokens), 1) if full_tokens else 0.0,
        "results": results,
        "recommended": recommend(results, floors),
    }
    if asks:
        report["floors"] = floors
        report["questions"] = {"questions": len(questions), "pairs": len(asks)}
    details = {
        "judge": judge.stats.as_dict(),
        "facts": len(facts),
        "hinge_facts": sum(1 for f in facts if is_hinge_fact(f)),
        "roles": list(roles),
        "packs": total,
        "series": series,
    }
    return report, details


BAR_STRATEGY = "layered"
BAR_BUDGET = 13000
BAR_RETENTION = 0.95


def check_bar(report: dict, details: dict) -> dict | None:
    """The engine's bar for the default strategy at the default budget: ≥ 95% of facts
    and 100% of hinges for every entitled role, 0 leaks, every pack within the budget.
    (Issue 9 also asked for ≤ 1/10 of the full-history tokens; since budgets are shares
    that lend what they leave unused (SPEC §5), a pack spends its budget, and the share
    is reported, not required.) None when that configuration was not run."""
    row = next(
        (r for r in report["results"]
         if r["strategy"] == BAR_STRATEGY and r["budget"] == BAR_BUDGET),
        None,
    )  # fmt: skip
    serie = next(
        (s for s in details.get("series", [])
         if s["strategy"] == BAR_STRATEGY and s["budget"] == BAR_BUDGET),
        None,
    )  # fmt: skip
    if row is None or serie is None:
        return None
    roles = serie["by_role"]
    worst = min((v["retention"] for v in roles.values()), default=1.0)
    worst_hinge = min((v["hinge_retention"] for v in roles.values()), default=1.0)
    full = report["full_history_tokens"] or 1
    share = row["mean_tokens"] / full
    return {
        "strategy": BAR_STRATEGY,
        "budget": BAR_BUDGET,
        "retention": row["retention"],
        "worst_role_retention": worst,
        "worst_role_hinge_retention": worst_hinge,
        "leaks": row["leaks"],
        "token_share": round(share, 4),
        "passed": worst >= BAR_RETENTION
        and worst_hinge >= 1.0
        and row["leaks"] == 0
        and row["max_tokens"] <= BAR_BUDGET,
    }


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def recall_columns(rows: Sequence[dict], categories: Sequence[str]) -> tuple[str, list[str]]:
    """(header, one line per row): evidence recall overall and by category, and the
    question packs' mean tokens; shared by the Arena's table and ``bench_recall``."""
    widths = [max(8, len(c) + 2) for c in categories]
    header = f"{'strategy':<18}{'budget':>7}{'recall':>9}" + "".join(
        f"{c:>{w}}" for c, w in zip(categories, widths, strict=True)
    )
    header += f"{'q tok':>9}"
    lines = []
    for r in rows:
        cats = r.get("evidence_by_category", {})
        line = f"{r['strategy']:<18}{r['budget']:>7}{_pct(r.get('evidence_recall')):>9}"
        line += "".join(
            f"{_pct(cats.get(c)):>{w}}" for c, w in zip(categories, widths, strict=True)
        )
        lines.append(line + f"{r.get('evidence_tokens', 0):>9.0f}")
    return header, lines


def categories_of(report: dict) -> list[str]:
    rows = [*report["results"], *report.get("floors", ())]
    return sorted({c for r in rows for c in r.get("evidence_by_category", {})})


def format_table(report: dict, details: dict | None = None) -> str:
    """The terminal table: one line per configuration, the recommended one starred; with
    questions, evidence recall first (the headline) and the two floors as rows."""
    rec = report.get("recommended") or {}
    floors = report.get("floors", [])

    def star(r: dict) -> str:
        chosen = (rec.get("strategy"), rec.get("budget")) == (r["strategy"], r["budget"])
        return " *" if chosen else ""

    lines: list[str] = []
    if floors:
        head, rows = recall_columns([*report["results"], *floors], categories_of(report))
        lines += ["evidence recall (each question as the pack's input)", head, "-" * len(head)]
        notes = [
            star(r) or ("  below bm25" if below_floor(r, floors) else "") for r in report["results"]
        ] + ["  (floor)"] * len(floors)
        lines += [line + note for line, note in zip(rows, notes, strict=True)]
        lines += ["", "facts retention (planted facts at each checkpoint)"]
    header = (
        f"{'strategy':<18}{'budget':>7}{'retention':>11}{'hinges':>8}{'mean tok':>10}"
        f"{'max tok':>9}{'build ms':>10}{'leaks':>7}"
    )
    lines += [header, "-" * len(header)]
    for r in report["results"]:
        lines.append(
            f"{r['strategy']:<18}{r['budget']:>7}{r['retention']:>11.1%}"
            f"{r['hinge_retention']:>8.1%}{r['mean_tokens']:>10.0f}{r['max_tokens']:>9}"
            f"{r['build_ms_median']:>10.2f}{r['leaks']:>7}{star(r)}"
        )
    lines.append("")
    lines.append(
        f"checkpoints: {len(report['checkpoints'])} (rounds {report['checkpoints'][0]}"
        f"–{report['checkpoints'][-1]}); full history: {report['full_history_tokens']:.0f} "
        "tokens (mean over roles, last checkpoint)"
    )
    if floors:
        q = report["questions"]
        lines.append(
            f"questions: {q['questions']} ({q['pairs']} question × role pairs with readable "
            "evidence); a configuration below the bm25 floor at its budget is never "
            "recommended"
        )
    if rec:
        lines.append(f"recommended: {rec['strategy']} @ {rec['budget']} (*)")
    elif floors:
        lines.append("recommended: none (every configuration leaks or is below the bm25 floor)")
    else:
        lines.append("recommended: none (every configuration leaks)")
    if details:
        lines.append(details["judge"]["note"])
    return "\n".join(lines)
