"""`manage.py convert_crd3 EPISODE.json -o transcript.json`: a CRD3 episode as a transcript.

For measuring the World Bible on real table talk (issue 10). The output is ordinary
babel-transcript/1 JSON: import it with `import_transcript` or `bench_memory --transcript`.
Third-party transcripts stay out of the repository (keep them under artifacts/).
"""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from campaigns.services import transcripts
from campaigns.services.crd3 import DEFAULT_DM_NAME, CRD3Error, crd3_to_transcript


class Command(BaseCommand):
    help = "Convert a CRD3 episode (cleaned or aligned JSON) into Babel's transcript format."

    def add_arguments(self, parser):
        parser.add_argument("file", help="A CRD3 episode JSON file.")
        parser.add_argument("-o", "--output", help="Write here instead of stdout.")
        parser.add_argument("--dm", default=DEFAULT_DM_NAME, help="The DM's speaker name.")
        parser.add_argument("--turns-per-round", type=int, default=20)
        parser.add_argument("--name", help="Experiment name (default: the file's stem).")

    def handle(self, *args, file, output, dm, turns_per_round, name, **options):
        path = Path(file)
        if not path.is_file():
            raise CommandError(f"No such file: {file}")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise CommandError(f"{file}: not JSON ({exc}).") from None
        try:
            transcript = crd3_to_transcript(
                data, name=name or path.stem, dm_name=dm, turns_per_round=turns_per_round
            )
        except CRD3Error as exc:
            raise CommandError(str(exc)) from None
        text = transcripts.dumps(transcript)
        if output:
            Path(output).write_text(text, encoding="utf-8")
            self.stderr.write(
                f"Wrote {output}: {len(transcript['turns'])} turns, "
                f"{transcript['turns'][-1]['round']} rounds, "
                f"{len(transcript['participants'])} roles."
            )
        else:
            self.stdout.write(text, ending="")
