"""Benchmark pack building: `manage.py bench_context [--sizes 1000 10000 50000]`.

For each size it creates a synthetic campaign (seeded, `campaigns.bench`; with
``--other-campaigns N`` first N others of the same size, as a hosted database holds) inside a
transaction that is rolled back at the end (``--committed``: committed, vacuumed on
PostgreSQL, and deleted afterwards), builds packs for every role, and prints the
median and p95 build time of the same pack rebuilt (pack cache bypassed), the median of
a pack built right after a new turn (the usual case in play: its sections' text is new),
queries per pack, the median time of a pack cache hit, and pack tokens against what the
full history would cost. Runs on whatever DATABASE_URL points at (SQLite by default),
with DEBUG off.
"""

from __future__ import annotations

import random
import statistics
import time

from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction
from django.db.models import Sum
from django.test.utils import CaptureQueriesContext, override_settings

from campaigns import bench
from campaigns.models import Experiment
from campaigns.reads import selectors
from campaigns.services.context import pack_for_role

INPUT = "Where did we leave the brinewick oil and the ashfern tonic?"


class _Rollback(Exception):
    pass


class Command(BaseCommand):
    help = "Time prompt-pack building at several history sizes (nothing is kept)."

    def add_arguments(self, parser):
        parser.add_argument("--sizes", nargs="+", type=int, default=[1000, 10000, 50000])
        parser.add_argument("--repeats", type=int, default=30, help="Packs per role and size.")
        parser.add_argument(
            "--other-campaigns",
            type=int,
            default=0,
            help="Other campaigns of the same size in the database while packs are built "
            "(a hosted database holds many; their turns share the search's tables).",
        )
        parser.add_argument(
            "--committed",
            action="store_true",
            help="Commit the campaigns (and, on PostgreSQL, vacuum) before timing, as a live "
            "database's are, and delete them afterwards, untimed. By default they are built "
            "inside a transaction that is rolled back, where PostgreSQL reads its own "
            "uncommitted rows more slowly.",
        )

    def handle(self, *args, **options):
        # Production conditions: with DEBUG on, every query is also logged (and, on SQLite,
        # run a second time to quote its parameters for the log).
        with override_settings(DEBUG=False):
            self._run(**options)

    def _run(self, *, sizes, repeats, other_campaigns, committed, **options):
        if any(size < 8 for size in sizes) or repeats < 1:
            raise CommandError("--sizes must be ≥ 8 turns and --repeats ≥ 1.")
        if other_campaigns < 0:
            raise CommandError("--other-campaigns must be ≥ 0.")
        self.others = other_campaigns
        # Inside a caller's transaction (a test) nothing can commit: roll back as usual.
        self.committed = committed and not connection.in_atomic_block
        self.stdout.write(
            f"database: {connection.vendor}; roles: {', '.join(bench.ROLES)}; "
            f"{repeats} packs per role and size; input: {INPUT!r}"
            + (f"; {other_campaigns} other campaigns of each size" if other_campaigns else "")
            + ("; campaigns committed" if self.committed else "")
        )
        header = (
            f"{'turns':>7} {'role':<7} {'median ms':>9} {'p95 ms':>7} {'new-turn ms':>11} "
            f"{'queries':>7} {'hit ms':>6} {'pack tok':>8} {'full-history tok':>16} {'strain':<8}"
        )
        if connection.vendor == "postgresql" and not connection.in_atomic_block:
            # Dead rows and index entries from earlier (rolled-back) runs would skew this one.
            with connection.cursor() as cursor:
                cursor.execute("VACUUM ANALYZE campaigns_turn")
        self.stdout.write(header)
        self.stdout.write("-" * len(header))
        medians: dict[int, tuple[float, float]] = {}
        for size in sizes:
            medians[size] = self._size(size, repeats)
        first = sizes[0]
        for size in sizes[1:]:
            for label, index in (("rebuilt", 0), ("after a new turn", 1)):
                now, then = medians[size][index], medians[first][index]
                ratio = now / then if then else float("nan")
                self.stdout.write(
                    f"median at {size} turns, {label}: {now:.2f} ms = {ratio:.2f}× the "
                    f"{first}-turn median ({then:.2f} ms)"
                )

    def _size(self, size: int, repeats: int) -> tuple[float, float]:
        """The medians over every role at ``size`` turns: a rebuilt pack, and a pack
        after a new turn."""
        rebuilt: list[float] = []
        after_turn: list[float] = []
        if self.committed:
            built = self._build(size)
            try:
                if connection.vendor == "postgresql":
                    with connection.cursor() as cursor:
                        cursor.execute("VACUUM ANALYZE campaigns_turn")
                        cursor.execute("VACUUM ANALYZE campaigns_turn_terms")
                for role in bench.ROLES:
                    samples, fresh = self._role(built[-1], role, size, repeats)
                    rebuilt += samples
                    after_turn += fresh
            finally:
                Experiment.objects.filter(pk__in=[e.pk for e in built]).delete()
        else:
            try:
                with transaction.atomic():
                    experiment = self._build(size)[-1]
                    if connection.vendor == "postgresql":
                        with connection.cursor() as cursor:
                            cursor.execute("ANALYZE campaigns_turn")
                    for role in bench.ROLES:
                        samples, fresh = self._role(experiment, role, size, repeats)
                        rebuilt += samples
                        after_turn += fresh
                    raise _Rollback
            except _Rollback:
                pass
        median, fresh_median = statistics.median(rebuilt), statistics.median(after_turn)
        self.stdout.write(
            f"{size:>7} {'all':<7} {median:>9.2f} {_p95(rebuilt):>7.2f} {fresh_median:>11.2f}"
        )
        return median, fresh_median

    def _build(self, size: int) -> list:
        """The other campaigns, then the measured one (last: its turns are the newest)."""
        started = time.perf_counter()
        built = [bench.create_campaign(size, seed=100 + seed) for seed in range(self.others)]
        built.append(bench.create_campaign(size))
        total = size * (1 + self.others)
        self.stderr.write(f"  built {total} turns in {time.perf_counter() - started:.1f} s")
        return built

    def _role(self, experiment, role: str, size: int, repeats: int):
        samples, pack = build_samples(experiment, role, repeats)
        with CaptureQueriesContext(connection) as queries:
            pack_for_role(experiment=experiment, role=role, input_text=INPUT, use_cache=False)
        hits = hit_samples(experiment, role, repeats)
        viewer = selectors.viewer_for_role(experiment=experiment, role=role)
        full = selectors.turns_visible_to(experiment=experiment, viewer=viewer).aggregate(
            t=Sum("tokens")
        )["t"]
        fresh = new_turn_samples(experiment, role, repeats)  # last: it adds turns
        self.stdout.write(
            f"{size:>7} {role:<7} {statistics.median(samples):>9.2f} {_p95(samples):>7.2f} "
            f"{statistics.median(fresh):>11.2f} "
            f"{len(queries.captured_queries):>7} {statistics.median(hits):>6.2f} "
            f"{pack.total_tokens:>8} {full or 0:>16} "
            f"{pack.strain:<8}"
        )
        return samples, fresh


def build_samples(experiment, role: str, repeats: int):
    """Milliseconds per pack built from the database (the cache bypassed), and the pack."""
    for _ in range(3):  # warm caches (tokenizer, compiled queries, query plans)
        pack_for_role(experiment=experiment, role=role, input_text=INPUT, use_cache=False)
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        pack = pack_for_role(experiment=experiment, role=role, input_text=INPUT, use_cache=False)
        samples.append((time.perf_counter() - started) * 1000)
    return samples, pack


def new_turn_samples(experiment, role: str, repeats: int, batch: int = 0) -> list[float]:
    """Milliseconds per pack built right after a new turn (`bench.append_turn`, not
    timed): the window has moved on, so its text — and whatever the new turn brings to
    the retrieval query — is new to every cache, as for an agent's pack in play. (A
    rebuilt pack, `build_samples`, finds its sections' token counts cached.) Each
    ``batch`` appends turns of its own text: a later batch never meets the counts an
    earlier one cached."""
    rng = random.Random(f"{experiment.pk}:{role}:{batch}")
    samples = []
    for _ in range(repeats):
        bench.append_turn(experiment, rng)
        started = time.perf_counter()
        pack_for_role(experiment=experiment, role=role, input_text=INPUT, use_cache=False)
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def hit_samples(experiment, role: str, repeats: int) -> list[float]:
    """Milliseconds per pack served by the pack cache (its stamp query included)."""
    pack_for_role(experiment=experiment, role=role, input_text=INPUT)
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        pack_for_role(experiment=experiment, role=role, input_text=INPUT)
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def raw_fetch_samples(experiment, repeats: int) -> list[float]:
    """The floor: one raw indexed fetch of a pack's window (last 4 rounds), as tuples."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT max(round) FROM campaigns_turn WHERE experiment_id = %s", [experiment.pk]
        )
        from_round = (cursor.fetchone()[0] or 0) - 3
        samples = []
        for _ in range(repeats + 3):
            started = time.perf_counter()
            cursor.execute(
                "SELECT id, seq, round, speaker, kind, content, visibility, tags, hinge, tokens "
                "FROM campaigns_turn WHERE experiment_id = %s AND round >= %s",
                [experiment.pk, from_round],
            )
            cursor.fetchall()
            samples.append((time.perf_counter() - started) * 1000)
    return samples[3:]


def _p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
