"""Evidence recall of a transcript file, in memory: `manage.py bench_recall TRANSCRIPT.json`.

No database: the transcript becomes a `History` (`history_from_transcript`), its
questions (or ``--questions FILE``'s, over the transcript's turn keys) are asked of every
strategy × budget with the question as the pack's input, and the two floors (recency and
BM25 at the same tokens) are scored beside them (`context_engine.arena.recall`). Prints
evidence recall overall and by category, the question packs' mean tokens and the
median pack build time per configuration, and the whole run's time.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from context_engine.arena import Replay, scaled_config
from context_engine.arena.recall import asks_for, score_questions
from context_engine.arena.run import recall_columns
from context_engine.arena.transcript import history_from_transcript, questions_from_transcript
from context_engine.types import STRATEGIES

DEFAULT_BUDGETS = (2000, 4000, 8000)


def _read_json(path: str, what: str) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CommandError(f"{what}: cannot read {path}: {exc}") from None
    if not isinstance(data, dict):
        raise CommandError(f"{what}: {path} is not a JSON object.")
    return data


class Command(BaseCommand):
    help = (
        "Score evidence recall of a transcript file in memory (no database): every "
        "strategy × budget and the recency and bm25 floors, by category, with tokens."
    )

    def add_arguments(self, parser):
        parser.add_argument("transcript")
        parser.add_argument("--budgets", nargs="+", type=int, default=list(DEFAULT_BUDGETS))
        parser.add_argument("--strategies", nargs="+", choices=STRATEGIES, default=None)
        parser.add_argument(
            "--questions", help='A {"questions": [...]} file over the transcript\'s turn keys.'
        )

    def handle(self, *args, transcript, budgets, strategies=None, questions=None, **options):
        if any(b < 1 for b in budgets):
            raise CommandError("--budgets: give positive token budgets.")
        started = time.perf_counter()
        data = _read_json(transcript, "transcript")
        items = None
        if questions:
            items = _read_json(questions, "--questions").get("questions")
            if not isinstance(items, list):
                raise CommandError('--questions: the file needs a "questions" list.')
        try:
            history, _ = history_from_transcript(data)
            asked = questions_from_transcript(data, items)
        except (KeyError, TypeError, ValueError) as exc:
            raise CommandError(f"Cannot read the transcript's questions: {exc}") from None
        replay = Replay(history)
        asks = asks_for(replay, asked)
        if not asks:
            raise CommandError("No question has evidence any role can read: nothing to score.")
        replay.prepare(sorted({a.question.asked_at_round for a in asks}))
        configs = [
            (s, b, scaled_config(history.config, strategy=s, total=b))
            for s in (strategies or STRATEGIES)
            for b in dict.fromkeys(budgets)
        ]
        loaded = time.perf_counter()
        tallies, floors = score_questions(replay, asks, configs)
        scored = time.perf_counter()
        self._print(tallies, floors)
        packs = len(asks) * len(configs)
        self.stdout.write(
            f"{len(history.turns)} turns, {len(asked)} questions, {len(asks)} question × role "
            f"pairs, {packs} packs; load {loaded - started:.2f} s, scoring "
            f"{scored - loaded:.2f} s ({1000 * (scored - loaded) / max(1, packs):.2f} ms a pack, "
            "floors included)"
        )

    def _print(self, tallies, floors) -> None:
        rows = [
            {"strategy": s, "budget": b, **t.as_dict()}
            for (s, b), t in [*tallies.items(), *floors.items()]
        ]
        categories = sorted({c for r in rows for c in r["evidence_by_category"]})
        header, lines = recall_columns(rows, categories)
        build = [
            statistics.median(t.build_ms) if t.build_ms else None for t in tallies.values()
        ] + [None] * len(floors)
        self.stdout.write(header + f"{'build ms':>10}")
        self.stdout.write("-" * (len(header) + 10))
        for line, ms in zip(lines, build, strict=True):
            self.stdout.write(line + (f"{ms:>10.2f}" if ms is not None else f"{'(floor)':>10}"))
