"""Benchmark active retrieval: `manage.py bench_retrieval [--sizes 1000 10000]`.

For each size, inside a transaction rolled back at the end (a seeded synthetic campaign,
`campaigns.bench`), prints for one player the median milliseconds of `/search`, `/lore`
and `/timeline` (`retrieval_run`, pin included), of building the player's pack without
and with a pin (pack cache bypassed), the tokens the pins add to the retrieval section,
the time of the pack's pin lookup alone, and the wall time of one offline round with the
relay's memory tool off and on (the DM looks up the round's timeline before answering
whispers: one extra pack and call; a first round only warms up).
"""

from __future__ import annotations

import statistics
import time

from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction
from django.test.utils import override_settings

from campaigns import bench
from campaigns.models import Experiment, RetrievalPin
from campaigns.reads import selectors
from campaigns.services.context import pack_for_role
from campaigns.services.memory.retrieval import pinned_for_role, retrieval_run
from campaigns.services.relay import round_create, round_run

ROLE = "Thorin"
INPUT = "Where did we leave the brinewick oil and the ashfern tonic?"


class _Rollback(Exception):
    pass


def _ms(fn, repeats: int) -> float:
    fn()  # warm
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def _retrieval_tokens(pack) -> int:
    return next(s.tokens for s in pack.sections if s.name == "retrieval")


class Command(BaseCommand):
    help = "Time /search, /lore, /timeline, packs with pins, and the relay's tool round."

    def add_arguments(self, parser):
        parser.add_argument("--sizes", nargs="+", type=int, default=[1000, 10000])
        parser.add_argument("--repeats", type=int, default=15)

    def handle(self, *args, **options):
        with override_settings(DEBUG=False):
            self._run(**options)

    def _run(self, *, sizes, repeats, **options):
        if any(size < 20 for size in sizes) or repeats < 1:
            raise CommandError("--sizes must be ≥ 20 turns and --repeats ≥ 1.")
        self.stdout.write(f"database: {connection.vendor}; role {ROLE}; {repeats} repeats")
        header = (
            f"{'turns':>6} {'search ms':>9} {'lore ms':>7} {'timeline ms':>11} "
            f"{'pack ms':>7} {'pinned pack ms':>14} {'pin lookup ms':>13} {'+retrieval tok':>14} "
            f"{'round ms':>8} {'round+tool ms':>13}"
        )
        self.stdout.write(header)
        self.stdout.write("-" * len(header))
        for size in sizes:
            try:
                with transaction.atomic():
                    self._size(size, repeats)
                    raise _Rollback
            except _Rollback:
                pass

    def _size(self, size: int, repeats: int) -> None:
        experiment = bench.create_campaign(size)
        viewer = selectors.viewer_for_role(experiment=experiment, role=ROLE)
        last = experiment.turns.order_by("-round").values_list("round", flat=True).first() or 0

        def run(command, query):
            return lambda: retrieval_run(
                experiment=experiment, viewer=viewer, command=command, query=query
            )

        search = _ms(run("search", "brinewick oil"), repeats)
        lore = _ms(run("lore", "brinewick oil"), repeats)
        timeline = _ms(run("timeline", f"{max(0, last - 2)}..{last}"), repeats)

        def pack():
            return pack_for_role(
                experiment=experiment, role=ROLE, input_text=INPUT, use_cache=False
            )

        RetrievalPin.objects.filter(experiment=experiment).delete()
        plain_ms, plain = _ms(pack, repeats), pack()
        retrieval_run(
            experiment=experiment, viewer=viewer, command="timeline", query=f"{last}..{last}"
        )
        pinned_ms, pinned = _ms(pack, repeats), pack()
        added = _retrieval_tokens(pinned) - _retrieval_tokens(plain)
        pins = _ms(
            lambda: pinned_for_role(experiment_id=experiment.pk, role=ROLE, viewer=viewer),
            repeats,
        )
        rounds = []
        for tools in (False, False, True):  # the first round only warms up
            Experiment.objects.filter(pk=experiment.pk).update(
                config={**experiment.config, "offline_agent_tools": tools}
            )
            experiment.refresh_from_db()
            job = round_create(experiment=experiment)
            started = time.perf_counter()
            round_run(job_id=str(job.pk))
            rounds.append((time.perf_counter() - started) * 1000)
        self.stdout.write(
            f"{size:>6} {search:>9.2f} {lore:>7.2f} {timeline:>11.2f} {plain_ms:>7.2f} "
            f"{pinned_ms:>14.2f} {pins:>13.2f} {added:>14} {rounds[1]:>8.0f} {rounds[2]:>13.0f}"
        )
