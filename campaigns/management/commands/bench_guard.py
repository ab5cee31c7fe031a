"""The output leak guard's false holds: `manage.py bench_guard [--rounds 120] [--checkpoint]`.

Inside a transaction rolled back at the end, imports the demo campaign and a generated
campaign (`generate_campaign`'s generator, ``--rounds`` long, seed ``--seed``), and runs
the guard (`output_guard.guard_sweep`) over every stored output meant for more than its
speaker — public turns and whispers to others — each judged against what was hidden when
it was written. Every such turn of both campaigns is meant to be published, so every hold
is a false hold: the command prints the counts and exits non-zero on any hold.
``--checkpoint`` runs /checkpoint first, so World Bible entries count as sources too.
"""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from campaigns import demo
from campaigns.services import transcripts
from campaigns.services.memory import run_command
from campaigns.services.output_guard import guard_sweep
from context_engine.arena.generate import generate_campaign
from context_engine.guard import WINDOW


class _Rollback(Exception):
    pass


class Command(BaseCommand):
    help = "Count the output leak guard's holds on the demo and a generated campaign (want 0)."

    def add_arguments(self, parser):
        parser.add_argument("--rounds", type=int, default=120)
        parser.add_argument("--players", type=int, default=4)
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument("--checkpoint", action="store_true")
        parser.add_argument(
            "--window", type=int, default=WINDOW, help="Words in a run (to compare choices)."
        )

    def handle(self, *args, rounds, players, seed, checkpoint, window, **options):
        holds = 0
        try:
            with transaction.atomic():
                campaigns = [
                    ("demo", demo.transcript()),
                    (
                        f"generated ({rounds} rounds, seed {seed})",
                        generate_campaign(rounds=rounds, players=players, seed=seed),
                    ),
                ]
                self.stdout.write(f"window: {window} words")
                for name, data in campaigns:
                    holds += self._sweep(name, data, checkpoint=checkpoint, window=window)
                raise _Rollback
        except _Rollback:
            pass
        if holds:
            raise CommandError(f"{holds} false hold(s)")

    def _sweep(self, name: str, data: dict, *, checkpoint: bool, window: int) -> int:
        experiment = transcripts.import_transcript(data=data)
        if checkpoint:
            run_command(experiment=experiment, command="checkpoint", user=None)
        started = time.perf_counter()
        report = guard_sweep(experiment=experiment, window=window)
        seconds = time.perf_counter() - started
        self.stdout.write(
            f"{name}: {experiment.turns.count()} turns, {report.outputs} outputs checked "
            f"({report.public} public), {report.candidates} candidate run(s), "
            f"{len(report.holds)} hold(s), {seconds:.2f} s"
        )
        for seq, quotes in report.holds[:20]:
            for quote in quotes[:3]:
                excerpt = quote["source"][quote["source_start"] : quote["source_end"]]
                self.stdout.write(f"  #{seq} quotes {quote['label']}: {excerpt!r}")
        return len(report.holds)
