"""`manage.py convert_locomo locomo10.json --conversation 2 --out c2.json`: LoCoMo as transcripts.

For measuring evidence recall on a public long-conversation benchmark (issue 22). The
output is babel-transcript/1 JSON with turn keys (the dia_ids) and `questions`.
`--all --out DIR` writes one file per conversation; `--questions FILE` replaces the
conversation's own qa with hand-labelled ones (`{"questions": [...]}`, evidence by dia_id).
LoCoMo is CC BY-NC: keep the data and the converted transcripts out of the repository.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from campaigns.services import transcripts
from campaigns.services.locomo import LoCoMoError, locomo_conversation, locomo_to_transcript


def _read_json(file: str):
    path = Path(file)
    if not path.is_file():
        raise CommandError(f"No such file: {file}")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise CommandError(f"{file}: not JSON ({exc}).") from None


class Command(BaseCommand):
    help = "Convert LoCoMo conversations into Babel's transcript format, with questions."

    def add_arguments(self, parser):
        parser.add_argument("file", help="A LoCoMo JSON file (a list of conversations).")
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--conversation", type=int, help="Which one, counting from 1.")
        which.add_argument("--all", action="store_true", help="Every conversation.")
        parser.add_argument("--out", required=True, help="Output file (with --all: a folder).")
        parser.add_argument("--questions", help="Hand-labelled questions replacing the qa.")

    def handle(self, *args, file, conversation, all, out, questions, **options):
        data = _read_json(file)
        labels = None
        if questions:
            if all:
                raise CommandError("--questions labels one conversation: use --conversation.")
            labels = _read_json(questions)
            if not isinstance(labels, dict):
                raise CommandError(f"{questions}: expected {{'questions': [...]}}.")
            labels = labels.get("questions")
        numbers = range(1, len(data) + 1) if all and isinstance(data, list) else [conversation]
        if all:
            Path(out).mkdir(parents=True, exist_ok=True)
        for number in numbers:
            target = Path(out) / f"locomo_conversation_{number}.json" if all else Path(out)
            try:
                transcript = locomo_to_transcript(
                    locomo_conversation(data, number), questions=labels
                )
            except LoCoMoError as exc:
                raise CommandError(str(exc)) from None
            target.write_text(transcripts.dumps(transcript), encoding="utf-8")
            self.stderr.write(
                f"Wrote {target}: {transcript['turns'][-1]['round']} sessions, "
                f"{len(transcript['turns'])} turns, {len(transcript['questions'])} questions."
            )
