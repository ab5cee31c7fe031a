"""Benchmark transcript import against raw tiktoken: `manage.py bench_import [--turns N]`.

Builds a seeded synthetic campaign (`campaigns.bench`), exports it to transcript text,
then times, each inside a transaction that is rolled back: importing that text
(`transcripts.loads` + `import_transcript`, what `POST /api/import/` does), and counting
the tokens of every turn's content with tiktoken alone (the floor: import must count
them too). Prints both and their throughput ratio; nothing is kept. On PostgreSQL the
import leaves full-text indexing to a task after commit (`index_turn_search`): that
task's time is printed on its own line, so the ratio hides nothing.
"""

from __future__ import annotations

import statistics
import time

from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction
from django.test.utils import override_settings

from campaigns import bench
from campaigns.services import transcripts
from context_engine import tokens


class _Rollback(Exception):
    pass


def import_numbers(turns: int, repeats: int) -> dict:
    """Median seconds: import of an N-turn transcript, and raw tiktoken on its contents."""
    try:
        with transaction.atomic():
            text = transcripts.dumps(
                transcripts.export_transcript(experiment=bench.create_campaign(turns))
            )
            raise _Rollback
    except _Rollback:
        pass
    contents = [turn["content"] for turn in transcripts.loads(text)["turns"]]
    counter = tokens.raw_counter()
    raw, batched = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        for content in contents:
            counter(content)
        raw.append(time.perf_counter() - started)
    batch = _batch_encoder()
    for _ in range(repeats if batch else 0):
        started = time.perf_counter()
        batch(contents)
        batched.append(time.perf_counter() - started)
    imported, indexed = [], []
    for _ in range(repeats):
        try:
            with transaction.atomic():
                started = time.perf_counter()
                experiment = transcripts.import_transcript(data=transcripts.loads(text))
                imported.append(time.perf_counter() - started)
                # PostgreSQL leaves full-text indexing to a task after commit: time it too.
                started = time.perf_counter()
                if transcripts.index_imported_turns(experiment_id=experiment.pk):
                    indexed.append(time.perf_counter() - started)
                raise _Rollback
        except _Rollback:
            pass
    return {
        "turns": turns,
        "bytes": len(text.encode("utf-8")),
        "import_s": statistics.median(imported),
        # The background task `index_turn_search` (PostgreSQL; None: indexed in the import).
        "indexing_s": statistics.median(indexed) if indexed else None,
        "tiktoken_s": statistics.median(raw),
        # tiktoken's own threaded batch (one thread per core): a lower floor, for reference.
        "tiktoken_batch_s": statistics.median(batched) if batched else None,
    }


def _batch_encoder():
    """tiktoken's ``encode_ordinary_batch`` on one thread per core (None without tiktoken)."""
    if tokens.backend() != "cl100k_base":
        return None
    import os

    import tiktoken

    encoding = tiktoken.get_encoding(tokens.ENCODING_NAME)
    threads = max(1, os.cpu_count() or 1)
    return lambda texts: encoding.encode_ordinary_batch(texts, num_threads=threads)


class Command(BaseCommand):
    help = "Time transcript import against raw tiktoken on the same text (nothing is kept)."

    def add_arguments(self, parser):
        parser.add_argument("--turns", type=int, default=24_000)
        parser.add_argument("--repeats", type=int, default=3)

    def handle(self, *args, turns, repeats, **options):
        if turns < 1 or repeats < 1:
            raise CommandError("--turns and --repeats must be ≥ 1.")
        with override_settings(DEBUG=False):  # production conditions: no query log
            n = import_numbers(turns, repeats)
        ratio = n["tiktoken_s"] / n["import_s"]
        self.stdout.write(
            f"database: {connection.vendor}; {n['turns']} turns, {n['bytes'] / 1e6:.1f} MB; "
            f"median of {repeats}\n"
            f"import:       {n['import_s']:.2f} s ({n['turns'] / n['import_s']:,.0f} turns/s)\n"
            f"raw tiktoken: {n['tiktoken_s']:.2f} s (one encode per turn, same contents)\n"
            + (
                f"raw tiktoken, threaded batch: {n['tiktoken_batch_s']:.2f} s\n"
                if n["tiktoken_batch_s"] is not None
                else ""
            )
            + (
                f"search indexing (background task after commit, not in import): "
                f"{n['indexing_s']:.2f} s\n"
                if n["indexing_s"] is not None
                else "search indexing: inside the import (FTS5 rows written with the turns)\n"
            )
            + f"import throughput = {ratio:.0%} of raw tiktoken (floor: 50%)"
        )
