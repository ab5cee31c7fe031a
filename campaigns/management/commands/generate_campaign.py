from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from campaigns.services import transcripts
from context_engine.arena.generate import generate_campaign


class Command(BaseCommand):
    help = (
        "Generate a seeded long campaign with planted facts of every kind (public, whisper, "
        "GM note, monologue, secret goal with a reveal round, coined terms asked late, an NPC "
        "who dies). With --out, write the transcript file; otherwise import it."
    )

    def add_arguments(self, parser):
        parser.add_argument("--rounds", type=int, default=200)
        parser.add_argument("--players", type=int, default=4)
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument("--out", help="Write the transcript here instead of importing it.")

    def handle(self, *args, rounds, players, seed, out=None, **options):
        try:
            data = generate_campaign(rounds=rounds, players=players, seed=seed)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        summary = f"{len(data['turns'])} turns, {len(data['facts'])} facts, {rounds} rounds"
        if out:
            Path(out).write_text(transcripts.dumps(data), encoding="utf-8")
            self.stdout.write(f"Wrote {out}: {summary}.")
            return
        try:
            experiment = transcripts.import_transcript(data=data)
        except ValidationError as exc:  # pragma: no cover - the generator writes valid files
            raise CommandError(f"Nothing was imported: {exc}") from None
        self.stdout.write(f"Imported experiment {experiment.pk}: {summary}.")
