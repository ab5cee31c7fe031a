"""The Arena's plot: retention against tokens per strategy, and retention over rounds.

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

    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5.2), dpi=110)
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
