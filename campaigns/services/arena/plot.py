"""The Arena's plot: retention against tokens per strategy, retention over rounds, and —
when the campaign has questions — evidence recall against tokens with the two floors.

matplotlib with the Agg backend (no display, thread-safe enough for a worker); imported
lazily so the web process never pays for it unless a plot is asked for.
"""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO


def arena_plot(report: dict, details: dict, path: str | Path | BinaryIO):
    """Write the PNG to ``path`` (a file name or a binary file object)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    floors = report.get("floors") or []
    panels = 3 if floors else 2
    fig, axes = plt.subplots(1, panels, figsize=(6.5 * panels, 5.2), dpi=110)
    left, right = axes[0], axes[1]
    strategies = list(dict.fromkeys(r["strategy"] for r in report["results"]))
    colours = {s: plt.get_cmap("tab10")(i % 10) for i, s in enumerate(strategies)}
    for strategy in strategies:
        rows = sorted(
            (r for r in report["results"] if r["strategy"] == strategy),
            key=lambda r: r["mean_tokens"],
        )
        left.plot(
            [r["mean_tokens"] for r in rows],
            [100 * r["retention"] for r in rows],
            marker="o",
            color=colours[strategy],
            label=strategy,
        )
        for r in rows:
            if r["leaks"]:
                left.scatter(
                    [r["mean_tokens"]],
                    [100 * r["retention"]],
                    marker="x",
                    s=90,
                    color="red",
                    zorder=5,
                )
    full = report.get("full_history_tokens")
    left.set_xlabel("mean pack tokens")
    left.set_ylabel("facts retained (%)")
    left.set_title(f"Retention vs tokens (full history: {int(full + 0.5)} tokens)")
    left.grid(True, alpha=0.3)
    left.legend(fontsize=8)
    checkpoints = report["checkpoints"]
    budget = max(r["budget"] for r in report["results"])
    for serie in details.get("series", []):
        if serie["budget"] != budget:
            continue
        right.plot(
            checkpoints,
            [100 * v for v in serie["retention_by_checkpoint"]],
            marker=".",
            color=colours[serie["strategy"]],
            label=serie["strategy"],
        )
    right.set_xlabel("round")
    right.set_ylabel("facts retained (%)")
    right.set_title(f"Retention over rounds (budget {budget})")
    right.set_ylim(-2, 102)
    right.grid(True, alpha=0.3)
    if floors:
        _recall_panel(axes[2], report, floors, colours)
    rec = report.get("recommended")
    if rec:
        fig.suptitle(
            f"Arena — experiment {report['experiment']}: recommended "
            f"{rec['strategy']} @ {rec['budget']}"
        )
    fig.tight_layout()
    target = Path(path) if isinstance(path, str) else path
    fig.savefig(target, format="png")
    plt.close(fig)
    return target


def _recall_panel(axis, report: dict, floors: list[dict], colours: dict) -> None:
    """Evidence recall against the question packs' tokens; the floors dashed, in grey."""
    rows_of = {}
    for row in [*report["results"], *floors]:
        rows_of.setdefault(row["strategy"], []).append(row)
    for name, rows in rows_of.items():
        rows = sorted(rows, key=lambda r: r["evidence_tokens"])
        floor = name not in colours
        axis.plot(
            [r["evidence_tokens"] for r in rows],
            [100 * (r["evidence_recall"] or 0) for r in rows],
            marker="s" if floor else "o",
            linestyle="--" if floor else "-",
            color=("black" if name == "bm25" else "grey") if floor else colours[name],
            label=f"{name} (floor)" if floor else name,
        )
    axis.set_xlabel("mean pack tokens (question packs)")
    axis.set_ylabel("evidence recall (%)")
    axis.set_title("Evidence recall vs tokens (below bm25: never recommended)")
    axis.set_ylim(-2, 102)
    axis.grid(True, alpha=0.3)
    axis.legend(fontsize=8)
