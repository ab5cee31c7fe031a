"""Measure prefix byte-stability: `manage.py bench_usage [--turns 2000] [--rounds 6]`.

Creates the seeded synthetic campaign of `campaigns.bench` (a DM and four players, all
offline), plays ``--rounds`` rounds through the real relay — memory work included (digest
folding, lore), since it rewrites the system message — and prints, per round and per
agent, what the relay recorded on each `ModelCall`: tokens in, and the share of the
prompt's bytes identical to the agent's previous prompt. From the messages themselves it
adds two numbers that decide what caching can save:

- *system same*: the whole system message (identity, rules, frozen, state, digest) is
  byte-identical to the agent's previous one;
- *frozen same*: its frozen prefix (identity, rules, frozen: what the Gemini context
  cache holds) is — the agent's cache is reused rather than created again;
- *cacheable*: tokens of the common prefix, which an automatic prefix cache (OpenAI-
  compatible servers) would not process again.

The campaign is deleted at the end. Runs on whatever DATABASE_URL points at.
"""

from __future__ import annotations

import statistics
from collections import defaultdict

from django.core.management.base import BaseCommand, CommandError
from django.test.utils import override_settings

from campaigns import bench
from campaigns.models import Experiment, ModelCall
from campaigns.services.relay import round_create, round_run, steps
from context_engine.render import frozen_prefix
from context_engine.tokens import count


def _common_chars(a: str, b: str) -> int:
    size = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        size += 1
    return size


def _flag(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "no")


def _flat(messages: list[dict]) -> str:
    return "".join(f"{m['role']}\x00{m['content']}\x00" for m in messages)


class Command(BaseCommand):
    help = "Play rounds offline and print each agent's prompt prefix stability (nothing kept)."

    def add_arguments(self, parser):
        parser.add_argument("--turns", type=int, default=2000, help="History before round 1.")
        parser.add_argument("--rounds", type=int, default=6)

    def handle(self, *args, turns: int, rounds: int, **options):
        if turns < 8 or rounds < 2:
            raise CommandError("--turns must be ≥ 8 and --rounds ≥ 2.")
        with override_settings(DEBUG=False):
            experiment = bench.create_campaign(turns)
            try:
                self._run(experiment, rounds)
            finally:
                Experiment.objects.filter(pk=experiment.pk).delete()

    def _run(self, experiment: Experiment, rounds: int) -> None:
        sent: list[tuple[str, list[dict], str]] = []
        original = steps.to_openai_messages

        def recording(pack):
            messages = original(pack)
            sent.append((pack.role, messages, frozen_prefix(pack)))
            return messages

        steps.to_openai_messages = recording
        try:
            for _ in range(rounds):
                job = round_run(job_id=round_create(experiment=experiment).pk)
                if job is None or job.status != "succeeded":
                    raise CommandError(f"round failed: {job and job.message}")
        finally:
            steps.to_openai_messages = original

        previous: dict[str, tuple[list[dict], str]] = {}
        extra: list[tuple[bool | None, bool | None, int]] = []
        for role, messages, frozen in sent:
            if role not in previous:
                extra.append((None, None, 0))
            else:
                before, before_frozen = previous[role]
                flat = _flat(messages)
                cacheable = count(flat[: _common_chars(_flat(before), flat)])
                extra.append((before[0] == messages[0], before_frozen == frozen, cacheable))
            previous[role] = (messages, frozen)

        calls = list(ModelCall.objects.filter(experiment=experiment).order_by("id"))
        if len(calls) != len(extra):
            raise CommandError(f"{len(calls)} calls recorded but {len(extra)} prompts seen")
        header = (
            f"{'round':>5} {'role':<7} {'step':<8} {'tokens in':>9} {'prefix stable':>13} "
            f"{'system same':>11} {'frozen same':>11} {'cacheable':>9}"
        )
        self.stdout.write(f"{bench.ROLES}; history {experiment.turns.count()} turns at the end")
        self.stdout.write(header)
        self.stdout.write("-" * len(header))
        by_role: dict[str, list] = defaultdict(list)
        for call, (same, frozen_same, cacheable) in zip(calls, extra, strict=True):
            share = "-" if call.prefix_stable_share is None else f"{call.prefix_stable_share:.1%}"
            self.stdout.write(
                f"{call.round:>5} {call.role:<7} {call.step:<8} {call.tokens_in:>9} "
                f"{share:>13} {_flag(same):>11} {_flag(frozen_same):>11} {cacheable:>9}"
            )
            if same is not None:
                by_role[call.role].append(
                    (call.prefix_stable_share, same, cacheable, call, frozen_same)
                )
        self.stdout.write("")
        self.stdout.write(
            f"{'role':<7} {'calls':>5} {'mean stable':>11} {'system same':>11} "
            f"{'frozen same':>11} {'cacheable / in':>14}"
        )
        total_in = total_cacheable = 0
        for role, rows in by_role.items():
            tokens_in = sum(row[3].tokens_in for row in rows)
            cacheable = sum(row[2] for row in rows)
            total_in += tokens_in
            total_cacheable += cacheable
            self.stdout.write(
                f"{role:<7} {len(rows):>5} {statistics.mean(r[0] for r in rows):>11.1%} "
                f"{sum(r[1] for r in rows):>5}/{len(rows):<5} "
                f"{sum(r[4] for r in rows):>5}/{len(rows):<5} {cacheable / tokens_in:>14.1%}"
            )
        if total_in:
            self.stdout.write(
                f"all calls after an agent's first: {total_cacheable} of {total_in} input tokens "
                f"({total_cacheable / total_in:.1%}) are a prefix the agent sent before"
            )
