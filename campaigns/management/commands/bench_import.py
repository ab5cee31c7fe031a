"""Benchmark transcript import against raw tiktoken: `manage.py bench_import [--turns N]`.

Builds a seeded synthetic campaign (`campaigns.bench`), exports it to transcript text
(rolled back), then times importing that text (`transcripts.loads` +
`import_transcript`, what `POST /api/import/` does) up to and including its commit, so
the checks a database defers to commit (foreign keys) are paid; each imported
experiment is deleted afterwards, untimed. The floor is counting the tokens of every
turn's content with tiktoken alone (import must count them too). Prints both and their
throughput ratio. The import leaves search indexing (the turns' term rows) to a task
after commit (`index_turn_search`): that
task's time is printed on its own line, so the ratio hides nothing. The first import of
a process counts its tokens alone while the counting helpers start
(`context_engine.token_pool`): it is printed on its own too.
"""

from __future__ import annotations

import statistics
import time

from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction
from django.test.utils import override_settings

from campaigns import bench
from campaigns.models import Experiment
from campaigns.services import transcripts
from context_engine import tokens


class _Rollback(Exception):
    pass


def import_numbers(turns: int, repeats: int) -> dict:
    """Median seconds: import (committed) of an N-turn transcript, and raw tiktoken on its
    contents; plus the first import's, and the PostgreSQL indexing task's."""
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
    runs = [_committed_import(text) for _ in range(repeats + 1)]
    first, imported = runs[0][0], [seconds for seconds, _ in runs[1:]]
    indexed = [seconds for _, seconds in runs[1:] if seconds is not None]
    return {
        "turns": turns,
        "bytes": len(text.encode("utf-8")),
        "import_s": statistics.median(imported),
        "first_import_s": first,
        # The background task `index_turn_search` after the import's commit.
        "indexing_s": statistics.median(indexed) if indexed else None,
        "tiktoken_s": statistics.median(raw),
        # tiktoken's own threaded batch (one thread per core): a lower floor, for reference.
        "tiktoken_batch_s": statistics.median(batched) if batched else None,
    }


def _committed_import(text: str) -> tuple[float, float | None]:
    """Seconds from the text to the import's commit, and seconds of the indexing task
    after it. The experiment is then deleted."""
    committed: list[float] = []
    experiment = None
    try:
        with transaction.atomic():
            # Registered before the import's own callbacks (sending the indexing task,
            # which runs right there when Celery is eager): marks the commit itself.
            transaction.on_commit(lambda: committed.append(time.perf_counter()))
            started = time.perf_counter()
            experiment = transcripts.import_transcript(data=transcripts.loads(text))
        done = time.perf_counter()
        # Inside an outer transaction (a test) nothing commits here: time to the block's end.
        committed_at = committed[0] if committed else done
        begun = time.perf_counter()
        transcripts.index_imported_turns(experiment_id=experiment.pk)  # what is left, if any
        return committed_at - started, done - committed_at + time.perf_counter() - begun
    finally:
        if experiment is not None:
            Experiment.objects.filter(pk=experiment.pk).delete()


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
            f"import:       {n['import_s']:.2f} s ({n['turns'] / n['import_s']:,.0f} turns/s), "
            "text to commit\n"
            f"first import of the process: {n['first_import_s']:.2f} s (counting helpers "
            "still starting: it counts alone)\n"
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
                else ""
            )
            + f"import throughput = {ratio:.0%} of raw tiktoken (floor: 50%)"
        )
