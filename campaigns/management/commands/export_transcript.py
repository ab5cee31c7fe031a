from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from campaigns.models import Experiment
from campaigns.services import transcripts


class Command(BaseCommand):
    help = "Export an experiment as a transcript (SPEC §8 format)."

    def add_arguments(self, parser):
        parser.add_argument("experiment_id", type=int)
        parser.add_argument("-o", "--output", help="Write to this file instead of stdout.")

    def handle(self, *args, experiment_id, output=None, **options):
        experiment = Experiment.objects.filter(pk=experiment_id).first()
        if experiment is None:
            raise CommandError(f"No experiment with id {experiment_id}.")
        text = transcripts.dumps(transcripts.export_transcript(experiment=experiment))
        if output:
            Path(output).write_text(text, encoding="utf-8")
            self.stderr.write(f"Wrote {output}")
        else:
            self.stdout.write(text, ending="")
