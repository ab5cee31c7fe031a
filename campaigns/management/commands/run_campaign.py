"""``manage.py run_campaign EXPERIMENT_ID [--rounds N]``: play rounds here and now.

Runs in this process (no worker needed, whatever ``REDIS_URL`` says) with the same
services the API uses: `round_create` (one round at a time per experiment) then
`round_run`, printing each step as it starts. Stops at the first round that fails.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from campaigns.models import Experiment, Job
from campaigns.services.relay import round_create, round_run


class Command(BaseCommand):
    help = "Run relay rounds of an experiment synchronously, printing progress."

    def add_arguments(self, parser):
        parser.add_argument("experiment_id", type=int, help="The experiment's id.")
        parser.add_argument(
            "--rounds", type=int, default=1, help="How many rounds to play (default 1)."
        )

    def handle(self, *args, experiment_id: int, rounds: int, **options):
        if rounds < 1:
            raise CommandError("--rounds must be at least 1.")
        experiment = Experiment.objects.filter(pk=experiment_id).first()
        if experiment is None:
            raise CommandError(f"No experiment with id {experiment_id}.")
        self.stdout.write(f"Experiment {experiment.pk}: {experiment.name}")
        for number in range(1, rounds + 1):
            try:
                job = round_create(experiment=experiment)
            except ValidationError as exc:
                raise CommandError(" ".join(exc.messages)) from exc
            job = round_run(job_id=job.pk, on_progress=self._progress)
            if job is None:
                raise CommandError("The round's job disappeared while it ran.")
            self.stdout.write(f"  [{job.progress:3d}%] {job.message}")
            if job.status == Job.Status.WAITING:
                raise CommandError(
                    f"Round {number} of {rounds} waits for a human ({job.message}): they post "
                    "their turn from the console or the API, and the round goes on."
                )
            if job.status != Job.Status.SUCCEEDED:
                raise CommandError(f"Round {number} of {rounds} failed: {job.message}")
        self.stdout.write(self.style.SUCCESS(f"Played {rounds} round(s)."))

    def _progress(self, percent: int, message: str) -> None:
        if percent < 100:
            self.stdout.write(f"  [{percent:3d}%] {message}")
