"""Every benchmark in one table: `manage.py bench` (what `make bench` runs).

Rows: pack build at 1,000 and 50,000 turns — the uncached pack path (a pack cache miss:
`pack_for_role(use_cache=False)`, every read from the database; all five roles of the
synthetic campaign), the same pack rebuilt ("pack build") and a pack built right after a
new turn ("pack, new turn": its sections' text is new, as in play), a pack cache hit,
and transcript import; each against its floor —
a raw indexed fetch of the pack's window (tuples, no ORM) for packs, raw tiktoken on
the same text for import — with the issue's targets. The packs' campaigns are committed,
as a live database's are, and the imports timed to their commit; both are deleted
afterwards, on whatever DATABASE_URL points at. The machine may be shared: the pack
rows are measured in passes (`--passes`) in which the two sizes take turns role by
role, their medians pool every pass, and a last column shows each pass's own median,
lowest to highest — how far one run of the same code may move. Compare numbers from the
same run, not across runs.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction
from django.test.utils import override_settings

from campaigns import bench
from campaigns.management.commands.bench_context import (
    build_samples,
    hit_samples,
    new_turn_samples,
    raw_fetch_samples,
)
from campaigns.management.commands.bench_import import import_numbers
from campaigns.models import Experiment
from campaigns.reads import hit_cache, postings_cache, precompiled, window_cache


class _Rollback(Exception):
    pass


@dataclass
class _Samples:
    """One campaign size's samples (ms), pooled over the passes, and each pass's medians."""

    build: list[float] = field(default_factory=list)
    fresh: list[float] = field(default_factory=list)
    hit: list[float] = field(default_factory=list)
    floor: list[float] = field(default_factory=list)
    passes: list[tuple[float, float]] = field(default_factory=list)  # (build, fresh) medians

    def medians(self) -> tuple[float, float, float, float]:
        return tuple(statistics.median(s) for s in (self.build, self.fresh, self.hit, self.floor))


def _pack_samples(sizes: list[int], repeats: int, passes: int) -> dict[int, _Samples]:
    """Each size's samples over ``passes`` passes, the sizes taking turns role by role
    within each (`_measured`): a shared machine's slow spells fall on both sizes alike
    instead of on whichever ran during one. Each pass: the same pack rebuilt, a pack
    cache hit and the raw fetch floor per role, then a pack after a new turn.

    The campaigns are committed (on PostgreSQL vacuumed), as a live database holds them,
    and deleted afterwards, untimed: the postings cache keeps only what committed reads
    gave (`postings_cache`), and PostgreSQL reads a transaction's own uncommitted rows
    more slowly. Inside a caller's transaction (a test) they are rolled back instead."""
    _clear_caches()
    if connection.in_atomic_block:
        try:
            with transaction.atomic():
                campaigns = {size: bench.create_campaign(size) for size in sizes}
                samples = _measured(campaigns, repeats, passes)
                raise _Rollback
        except _Rollback:
            return samples
    campaigns = {}
    try:
        for size in sizes:
            campaigns[size] = bench.create_campaign(size)
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("VACUUM ANALYZE campaigns_turn")
                cursor.execute("VACUUM ANALYZE campaigns_turn_terms")
        return _measured(campaigns, repeats, passes)
    finally:
        Experiment.objects.filter(pk__in=[e.pk for e in campaigns.values()]).delete()
        _clear_caches()


def _clear_caches() -> None:
    postings_cache.clear()
    hit_cache.clear()
    window_cache.clear()
    precompiled.clear_kept()


def _measured(campaigns: dict, repeats: int, passes: int) -> dict[int, _Samples]:
    """Within a pass the sizes take turns role by role (which goes first flips with
    each role and pass), so a slow spell of a few seconds falls on both sizes' packs,
    not on one size's whole pass; the packs after a new turn come last (they add turns)."""
    samples = {size: _Samples() for size in campaigns}
    sizes = list(campaigns)
    for number in range(passes):
        builds = {size: [] for size in sizes}
        fresh = {size: [] for size in sizes}
        for index, role in enumerate(bench.ROLES):
            for size in _turn_order(sizes, number + index):
                builds[size] += build_samples(campaigns[size], role, repeats)[0]
                samples[size].hit += hit_samples(campaigns[size], role, repeats)
        for size in sizes:
            samples[size].floor += raw_fetch_samples(campaigns[size], repeats * len(bench.ROLES))
        for index, role in enumerate(bench.ROLES):
            for size in _turn_order(sizes, number + index):
                fresh[size] += new_turn_samples(campaigns[size], role, repeats, batch=number)
        for size in sizes:
            samples[size].build += builds[size]
            samples[size].fresh += fresh[size]
            samples[size].passes.append(
                (statistics.median(builds[size]), statistics.median(fresh[size]))
            )
    return samples


def _turn_order(sizes: list[int], turn: int) -> list[int]:
    return sizes if turn % 2 == 0 else sizes[::-1]


def _spread(values: list[float], fmt: str = "{:.2f}") -> str:
    """Lowest–highest of the passes' values ("-" for a single pass)."""
    if len(values) < 2:
        return "-"
    return f"{fmt.format(min(values))}–{fmt.format(max(values))}"


class Command(BaseCommand):
    help = "Run every benchmark and print one table with ratios against the floors."

    def add_arguments(self, parser):
        parser.add_argument("--sizes", nargs=2, type=int, default=[1000, 50000])
        parser.add_argument(
            "--repeats", type=int, default=20, help="Packs per role, size and pass."
        )
        parser.add_argument(
            "--passes",
            type=int,
            default=3,
            help="Alternated passes over the sizes; medians pool them, and the table shows "
            "the passes' own medians, lowest to highest.",
        )
        parser.add_argument("--import-turns", type=int, default=24_000)

    def handle(self, *args, **options):
        # Production conditions: with DEBUG on, every query is also logged (and, on SQLite,
        # run a second time to quote its parameters for the log).
        with override_settings(DEBUG=False):
            self._run(**options)

    def _run(self, *, sizes, repeats, passes, import_turns, **options):
        if passes < 1 or repeats < 1:
            raise CommandError("--passes and --repeats must be at least 1.")
        if len(set(sizes)) != 2 or min(sizes) < 1:
            raise CommandError("--sizes takes two different campaign sizes of at least 1 turn.")
        vendor = connection.vendor
        if vendor == "postgresql" and not connection.in_atomic_block:
            # VACUUM cannot run in a transaction (the tests call this inside one).
            with connection.cursor() as cursor:
                cursor.execute("VACUUM ANALYZE campaigns_turn")
        small, large = sizes
        self.stderr.write(
            f"pack benchmarks on {vendor} ({small} and {large} turns, {passes} passes)…"
        )
        samples = _pack_samples([small, large], repeats, passes)
        s_build, s_fresh, _, s_floor = samples[small].medians()
        l_build, l_fresh, l_hit, l_floor = samples[large].medians()
        s_passes, l_passes = samples[small].passes, samples[large].passes
        spread = {  # the passes' own medians (ratios: pass by pass), lowest–highest
            "s_build": _spread([b for b, _ in s_passes]),
            "l_build": _spread([b for b, _ in l_passes]),
            "s_fresh": _spread([f for _, f in s_passes]),
            "l_fresh": _spread([f for _, f in l_passes]),
            "build_ratio": _spread(
                [lb / sb for (lb, _), (sb, _) in zip(l_passes, s_passes, strict=True)], "{:.2f}×"
            ),
            "fresh_ratio": _spread(
                [lf / sf for (_, lf), (_, sf) in zip(l_passes, s_passes, strict=True)], "{:.2f}×"
            ),
        }
        self.stderr.write(f"import benchmark ({import_turns} turns)…")
        imp = import_numbers(import_turns, 3)
        batch_s = imp["tiktoken_batch_s"]
        rows = [
            ("pack build", f"{small:,} turns", s_build, "raw indexed fetch", s_floor,
             f"{s_build / s_floor:.0f}×", "≤ 5 ms", s_build <= 5, spread["s_build"]),
            ("pack build", f"{large:,} turns", l_build, "raw indexed fetch", l_floor,
             f"{l_build / l_floor:.0f}×", "≤ 5 ms", l_build <= 5, spread["l_build"]),
            ("pack build", f"{large:,} vs {small:,}", l_build, f"pack build at {small:,}",
             s_build, f"{l_build / s_build:.2f}×", "≤ 1.2×", l_build / s_build <= 1.2,
             spread["build_ratio"]),
            ("pack, new turn", f"{small:,} turns", s_fresh, "raw indexed fetch", s_floor,
             f"{s_fresh / s_floor:.0f}×", "≤ 5 ms", s_fresh <= 5, spread["s_fresh"]),
            ("pack, new turn", f"{large:,} turns", l_fresh, "raw indexed fetch", l_floor,
             f"{l_fresh / l_floor:.0f}×", "≤ 5 ms", l_fresh <= 5, spread["l_fresh"]),
            ("pack, new turn", f"{large:,} vs {small:,}", l_fresh, f"new turn at {small:,}",
             s_fresh, f"{l_fresh / s_fresh:.2f}×", "≤ 1.2×", l_fresh / s_fresh <= 1.2,
             spread["fresh_ratio"]),
            ("pack cache hit", f"{large:,} turns", l_hit, "raw indexed fetch", l_floor,
             f"{l_hit / l_floor:.1f}×", "-", None, "-"),
            ("import", f"{imp['turns']:,} turns", imp["import_s"] * 1000, "raw tiktoken",
             imp["tiktoken_s"] * 1000, f"{imp['tiktoken_s'] / imp['import_s']:.0%} of floor",
             "≥ 50%", imp["tiktoken_s"] / imp["import_s"] >= 0.5, "-"),
        ]  # fmt: skip
        rows.append(  # the process's first: counting helpers still starting, it counts alone
            ("import, first", f"{imp['turns']:,} turns", imp["first_import_s"] * 1000,
             "raw tiktoken", imp["tiktoken_s"] * 1000,
             f"{imp['tiktoken_s'] / imp['first_import_s']:.0%} of floor", "-", None, "-")
        )  # fmt: skip
        if batch_s is not None:
            rows.append(
                ("import", f"{imp['turns']:,} turns", imp["import_s"] * 1000,
                 "tiktoken threaded batch", batch_s * 1000,
                 f"{batch_s / imp['import_s']:.0%} of floor", "-", None, "-")
            )  # fmt: skip
        if imp["indexing_s"] is not None:  # PostgreSQL: the task after the import's commit
            rows.append(
                ("search indexing", f"{imp['turns']:,} turns", imp["indexing_s"] * 1000,
                 "background task", imp["indexing_s"] * 1000, "-", "-", None, "-")
            )  # fmt: skip
        header = (
            f"{'benchmark':<15} {'case':<17} {'median ms':>10}  {'floor':<24} {'floor ms':>9}"
            f"  {'ratio':<13} {'target':<7} {'met':<3}  {'passes':<13}"
        )
        self.stdout.write(
            f"database: {vendor}; pack build = the uncached pack path (pack cache bypassed, "
            f"every read from the database); medians over {passes} passes (sizes taking "
            f"turns role by role) of {repeats} packs per role; passes = each pass's own "
            "median (or ratio), lowest to highest"
        )
        self.stdout.write(header)
        self.stdout.write("-" * len(header))
        for name, case, value, floor, floor_value, ratio, target, met, passes_seen in rows:
            verdict = "-" if met is None else ("yes" if met else "NO")
            self.stdout.write(
                f"{name:<15} {case:<17} {value:>10.2f}  {floor:<24} {floor_value:>9.2f}"
                f"  {ratio:<13} {target:<7} {verdict:<3}  {passes_seen:<13}"
            )
