"""Benchmark a real model at the table: `manage.py bench_models MODEL [--rounds 2]
[--base-url URL] [--window N] [--max-output N]`.

Seats every agent of the demo on MODEL (any id the model field takes: `openai:NAME`,
`llamacpp:NAME`, `ollama:NAME`, …, checked like the API checks it), plays the rounds in
this process, and prints per call: latency, prompt tokens against the window, status;
then the held share, repair success and failures. Everything runs inside a transaction
that is rolled back: nothing is kept. The memory workers stay offline (a /checkpoint's
cost is `bench_memory`'s).
"""

from __future__ import annotations

import statistics

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from campaigns import demo
from campaigns.models import Job, ModelCall, Participant, RoundStep
from campaigns.services import transcripts
from campaigns.services.providers import clean_provider_fields
from campaigns.services.relay import round_create, round_run
from campaigns.services.windows import model_window


class _Rollback(Exception):
    pass


class Command(BaseCommand):
    help = "Play demo rounds with every agent on one real model and report its calls."

    def add_arguments(self, parser):
        parser.add_argument("model", help="The model field, e.g. openai:smollm2.")
        parser.add_argument("--rounds", type=int, default=2)
        parser.add_argument("--base-url", default="", help="The server (else the preset's).")
        parser.add_argument("--window", type=int, default=None, help="Declared window.")
        parser.add_argument("--max-output", type=int, default=160)

    def handle(self, *args, model, rounds, base_url, window, max_output, **options):
        if not 1 <= rounds <= 20:
            raise CommandError("--rounds must be from 1 to 20.")
        try:
            fields = clean_provider_fields(
                model=model,
                base_url=base_url,
                context_window=window,
                max_output_tokens=max_output,
                allow_human=False,
            )
        except ValidationError as exc:
            raise CommandError(f"Bad model settings: {exc.message_dict}") from exc
        fields = {k: v for k, v in fields.items() if v is not None}
        fields["max_output_tokens"] = max_output
        try:
            with transaction.atomic():
                self._run(fields, rounds)
                raise _Rollback
        except _Rollback:
            pass

    def _run(self, fields: dict, rounds: int) -> None:
        experiment = transcripts.import_transcript(data=demo.transcript())
        experiment.config = {**(experiment.config or {}), "memory_model": "offline"}
        experiment.save(update_fields=["config"])
        agents = experiment.participants.filter(
            kind__in=[Participant.Kind.DM, Participant.Kind.PLAYER]
        )
        agents.update(**fields)
        first = agents.first()
        found = model_window(first)
        self.stdout.write(
            f"model {first.model} at {first.base_url or 'its preset'}; window: "
            + (f"{found.tokens} tokens ({found.source})" if found else "unknown")
        )
        jobs = []
        for _ in range(rounds):
            job = round_create(experiment=experiment)
            round_run(job_id=job.pk, continue_play=False)
            job = Job.objects.get(pk=job.pk)
            jobs.append(job)
            self.stdout.write(f"round {job.result.get('round')}: {job.status} — {job.message}")
        self._report(experiment, jobs, found.tokens if found else None)

    def _report(self, experiment, jobs, window: int | None) -> None:
        calls = list(ModelCall.objects.filter(experiment=experiment).order_by("created", "id"))
        header = f"{'key':<28} {'status':<10} {'ms':>7} {'prompt':>7} {'out':>5} {'of window':>9}"
        self.stdout.write(header)
        self.stdout.write("-" * len(header))
        for call in calls:
            share = f"{call.tokens_in / window:.0%}" if window and call.tokens_in else "-"
            self.stdout.write(
                f"{call.key[:28]:<28} {call.status:<10} {call.duration_ms or 0:>7} "
                f"{call.tokens_in:>7} {call.tokens_out:>5} {share:>9}"
            )
        answered = [c for c in calls if c.status == ModelCall.Status.OK]
        steps = RoundStep.objects.filter(experiment=experiment)
        held = sum(int((s.detail or {}).get("held") or 0) for s in steps)
        stored = sum(len(s.turns or []) for s in steps)
        repairs = [c for c in calls if c.key.endswith(":repair")]
        repaired = sum(int((s.detail or {}).get("repaired") or 0) for s in steps)
        latencies = [c.duration_ms for c in answered if c.duration_ms is not None]
        self.stdout.write(
            f"calls: {len(calls)} ({len(answered)} answered, "
            f"{len(calls) - len(answered)} failed or timed out); "
            f"median latency: {statistics.median(latencies) if latencies else 0:.0f} ms; "
            f"largest prompt: {max((c.tokens_in for c in calls), default=0)} tokens"
            + (f" of a {window}-token window" if window else "")
        )
        self.stdout.write(
            f"turns stored: {stored}; held for the DM: {held} "
            f"({held / stored:.0%} of stored); repair requests: {len(repairs)}, "
            f"labelled on repair: {repaired}; failed steps: "
            f"{steps.filter(status=RoundStep.Status.FAILED).count()}; rounds succeeded: "
            f"{sum(j.status == Job.Status.SUCCEEDED for j in jobs)} of {len(jobs)}"
            if stored
            else "no turns stored"
        )
