from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from campaigns.services import transcripts


class Command(BaseCommand):
    help = "Import a transcript file (SPEC §8 format) as a new experiment. All or nothing."

    def add_arguments(self, parser):
        parser.add_argument("file", help="Path to the transcript JSON file ('-' for stdin).")

    def handle(self, *args, file, **options):
        if file == "-":
            import sys

            text = sys.stdin.read()
        else:
            path = Path(file)
            if not path.is_file():
                raise CommandError(f"No such file: {file}")
            text = path.read_text(encoding="utf-8")
        try:
            experiment = transcripts.import_transcript(data=transcripts.loads(text))
        except ValidationError as exc:
            details = "; ".join(
                f"{field}: {' '.join(messages)}" for field, messages in exc.message_dict.items()
            )
            raise CommandError(f"Nothing was imported. {details}") from None
        self.stdout.write(
            f"Imported experiment {experiment.pk} ({experiment.name!r}) with "
            f"{experiment.turns.count()} turns."
        )
