"""Benchmark the memory pipeline: `manage.py bench_memory [--sizes 1000 5000 25000]`.

Prints, per history size (a synthetic campaign from `campaigns.bench`, rolled back):
full hydration ms per turn, the cost of hydrating one more turn on top of that history
(it must not grow with the history), and the offline digests' time. Then the
/checkpoint-to-import ratio on an exported and re-imported campaign, and precision and
recall of the World Bible on the labelled table-talk transcript shipped in
`campaigns/fixtures/labelled_tabletalk.json`. Timings depend on the machine and its
load; read them as orders of magnitude.

`--transcript PATH` measures one real transcript instead (nothing kept): its import time,
its /checkpoint time and their ratio, and every proposed World Bible entry. With
`--labels PATH` (a JSON object {term: "keep" | "junk"}, kept beside the data, never
committed for third-party transcripts) it also prints the junk share, the terms labelled
keep that were not proposed, and the proposals not yet labelled.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from campaigns import bench
from campaigns.models import Job, LoreEntry, Turn
from campaigns.services.memory import (
    hydrate_experiment,
    hydrate_turn,
    memory_job_run,
    run_command,
)
from campaigns.services.memory.audiences import audiences_for
from campaigns.services.memory.digests import summarize_one
from campaigns.services.transcripts import (
    export_transcript,
    import_transcript,
    index_imported_turns,
    loads,
)
from context_engine.memory.extraction import merge_key
from context_engine.memory.observe import add_observation, observe
from context_engine.memory.tabletalk import is_ooc_speaker

LABELLED = Path(__file__).resolve().parents[2] / "fixtures" / "labelled_tabletalk.json"


class _Rollback(Exception):
    pass


def precision_recall(path: Path = LABELLED) -> dict:
    """World Bible terms the offline rules admit on a labelled transcript, scored."""
    data = json.loads(path.read_text())
    speakers = sorted({t["speaker"] for t in data["turns"]})
    stats: dict = {}
    found: dict[str, str] = {}
    for seq, turn in enumerate(data["turns"], start=1):
        if is_ooc_speaker(turn["speaker"]):
            continue
        known = frozenset(k for k, s in stats.items() if s.kind == "common")
        for obs in observe(turn["content"], ignore=speakers, known_phrases=known):
            stats[obs.key] = add_observation(
                stats.get(obs.key), obs, turn_id=seq, seq=seq, round_=1
            )
            if stats[obs.key].admitted():
                found.setdefault(obs.key, stats[obs.key].term)
    expected = set(data["lore"])
    hits = expected & set(found)
    return {
        "proposed": sorted(found),
        "junk": sorted(set(found) - expected),
        "missed": sorted(expected - set(found)),
        "precision": len(hits) / max(1, len(found)),
        "recall": len(hits) / max(1, len(expected)),
    }


class Command(BaseCommand):
    help = "Time World Bible hydration and digests; score precision/recall (nothing kept)."

    def add_arguments(self, parser):
        parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 25000])
        parser.add_argument("--import-size", type=int, default=5000)
        parser.add_argument("--transcript", help="Measure this transcript file instead.")
        parser.add_argument("--labels", help="JSON {term: keep|junk} for --transcript.")

    def handle(self, *args, sizes, import_size, transcript=None, labels=None, **options):
        if labels and not transcript:
            raise CommandError("--labels needs --transcript.")
        if transcript:
            self._transcript(Path(transcript), Path(labels) if labels else None)
            return
        self.stdout.write("Shared, noisy machine: timings are indicative only.")
        self.stdout.write(
            f"{'turns':>7} {'hydrate ms/turn':>16} {'+1 turn ms':>11} {'digests s':>10}"
        )
        for size in sizes:
            self._size(size)
        self._checkpoint_ratio(import_size)
        scores = precision_recall()
        self.stdout.write(
            f"labelled transcript: precision {scores['precision']:.2f}, "
            f"recall {scores['recall']:.2f} ({len(scores['proposed'])} proposed)"
        )
        self.stdout.write(f"  junk: {scores['junk']}")
        self.stdout.write(f"  missed: {scores['missed']}")

    def _size(self, size: int) -> None:
        try:
            with transaction.atomic():
                experiment = bench.create_campaign(size)
                started = time.perf_counter()
                hydrate_experiment(experiment=experiment)
                full = time.perf_counter() - started
                last = Turn.objects.filter(experiment=experiment).order_by("-seq").first()
                extra = Turn.objects.create(
                    experiment=experiment,
                    round=last.round,
                    seq=last.seq + 1,
                    speaker="DM",
                    kind="narrative",
                    content="The Gloomfen smugglers open the trust ledger. Gloomfen waits.",
                )
                started = time.perf_counter()
                hydrate_turn(turn=extra)
                one = time.perf_counter() - started
                started = time.perf_counter()
                for audience in audiences_for(experiment=experiment):
                    summarize_one(
                        experiment=experiment, audience=audience, round_to=last.round, force=True
                    )
                digests = time.perf_counter() - started
                self.stdout.write(
                    f"{size:>7} {1000 * full / size:>16.2f} {1000 * one:>11.1f} {digests:>10.1f}"
                )
                raise _Rollback
        except _Rollback:
            pass

    def _checkpoint_ratio(self, size: int) -> None:
        try:
            with transaction.atomic():
                data = json.loads(
                    json.dumps(export_transcript(experiment=bench.create_campaign(size)))
                )
                data.pop("lore", None)
                started = time.perf_counter()
                imported = import_transcript(data=data)
                took_import = time.perf_counter() - started
                # Inside this rolled-back transaction nothing is sent on commit: run the
                # search indexing task here, as the worker would, untimed.
                index_imported_turns(experiment_id=imported.pk)
                started = time.perf_counter()
                job = run_command(experiment=imported, command="checkpoint", user=None)
                # The same for the job's steps, one batch per step.
                while job.status in (Job.Status.PENDING, Job.Status.RUNNING):
                    job = memory_job_run(job=job)
                took_checkpoint = time.perf_counter() - started
                self.stdout.write(
                    f"import of {size} turns {took_import:.2f}s, /checkpoint "
                    f"{took_checkpoint:.2f}s ({job.status}): ratio "
                    f"{took_checkpoint / max(took_import, 1e-9):.1f}x"
                )
                raise _Rollback
        except _Rollback:
            pass

    def _transcript(self, path: Path, labels_path: Path | None) -> None:
        if not path.is_file():
            raise CommandError(f"No such file: {path}")
        labels = _read_labels(labels_path) if labels_path else None
        data = loads(path.read_text(encoding="utf-8"))
        data.pop("lore", None)
        try:
            with transaction.atomic():
                started = time.perf_counter()
                imported = import_transcript(data=data)
                took_import = time.perf_counter() - started
                index_imported_turns(experiment_id=imported.pk)  # the worker's part (above)
                started = time.perf_counter()
                job = run_command(experiment=imported, command="checkpoint", user=None)
                while job.status in (Job.Status.PENDING, Job.Status.RUNNING):
                    job = memory_job_run(job=job)
                took_checkpoint = time.perf_counter() - started
                entries = list(
                    LoreEntry.objects.filter(experiment=imported).order_by("-mention_count", "key")
                )
                turns = imported.turns.count()
                raise _Rollback
        except _Rollback:
            pass
        self.stdout.write(
            f"{path.name}: {turns} turns; import {took_import:.2f}s, /checkpoint "
            f"{took_checkpoint:.2f}s ({job.status}, {1000 * took_checkpoint / max(turns, 1):.1f} "
            f"ms/turn): ratio {took_checkpoint / max(took_import, 1e-9):.1f}x"
        )
        self.stdout.write(f"{len(entries)} proposed entries (term, category, mentions, label):")
        proposed = set()
        for entry in entries:
            key = merge_key(entry.term)
            proposed.add(key)
            label = labels.get(key, "?") if labels is not None else ""
            self.stdout.write(
                f"  {entry.term:<32} {entry.category:<9} {entry.mention_count:>4}  {label}"
            )
        if labels is None:
            return
        junk = sorted(k for k in proposed if labels.get(k) == "junk")
        unlabelled = sorted(k for k in proposed if k not in labels)
        # A keep term is found when a proposal names it, alone or inside a longer name
        # ("Idris Vane" in "Captain Idris Vane"), or a shorter form of it ("Codex").
        missed = sorted(
            k
            for k, v in labels.items()
            if v == "keep" and not any(_same_thing(k, p) for p in proposed)
        )
        kept = len(proposed) - len(junk) - len(unlabelled)
        self.stdout.write(
            f"junk {len(junk)}/{len(proposed)} = {len(junk) / max(1, len(proposed)):.0%} "
            f"(kept {kept}, unlabelled {len(unlabelled)})"
        )
        keep = [k for k, v in labels.items() if v == "keep"]
        self.stdout.write(
            f"recall of terms labelled keep: {len(keep) - len(missed)}/{len(keep)} = "
            f"{(len(keep) - len(missed)) / max(1, len(keep)):.0%}"
        )
        self.stdout.write(f"  junk: {junk}")
        self.stdout.write(f"  unlabelled: {unlabelled}")
        self.stdout.write(f"  labelled keep but not proposed: {missed}")


def _same_thing(a: str, b: str) -> bool:
    """Merge keys ``a`` and ``b`` are equal, or one's words are a run in the other's."""
    small, big = sorted((a.split(), b.split()), key=len)
    return any(big[i : i + len(small)] == small for i in range(len(big) - len(small) + 1))


def _read_labels(path: Path) -> dict[str, str]:
    """{merge key: keep|junk} from a JSON object {term: keep|junk}."""
    if not path.is_file():
        raise CommandError(f"No such file: {path}")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise CommandError(f"{path}: not JSON ({exc}).") from None
    if not isinstance(raw, dict) or not all(v in ("keep", "junk") for v in raw.values()):
        raise CommandError(f"{path}: expected a JSON object {{term: 'keep' | 'junk'}}.")
    return {merge_key(term): label for term, label in raw.items()}
