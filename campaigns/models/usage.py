"""What model calls cost: tokens in, cached and out, and how stable each prompt's prefix is."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from campaigns.models.campaign import Experiment


class ModelCall(models.Model):
    """One model call an agent (or a memory worker) made: its tokens and prefix stability,
    and how it ended (``status``: answered, timed out, too long for the window, failed).

    ``key`` makes recording idempotent: a relay step is ``round:R:STEP:ROLE``, so a step
    run twice (a redelivered task, a resumed round) updates its row instead of adding one.
    ``prefix_blocks`` are chained fingerprints of the prompt's bytes (no text is kept),
    compared with the same agent's previous call to give ``prefix_stable_share``.
    Counts are the provider's usage metadata; offline calls count with our own counter.
    """

    class Status(models.TextChoices):
        OK = "ok", "Answered"
        TIMED_OUT = "timed_out", "Timed out"
        TOO_LONG = "too_long", "Prompt too long"
        FAILED = "failed", "Failed"

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="model_calls")
    job = models.ForeignKey(
        "Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="model_calls"
    )
    key = models.CharField(max_length=200)
    round = models.PositiveIntegerField(default=0)
    role = models.CharField(max_length=64, blank=True, help_text="Blank for memory workers.")
    step = models.CharField(max_length=32, help_text="narrate, act, answer or a worker name.")
    model = models.CharField(max_length=100)
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_cached = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    prompt_bytes = models.PositiveIntegerField(default=0)
    prefix_blocks = models.JSONField(default=list, blank=True)
    prefix_stable_share = models.FloatField(
        null=True, blank=True, help_text="Share of prompt bytes equal to the previous call's."
    )
    cache_name = models.CharField(max_length=200, blank=True)
    status = models.CharField(
        max_length=16,
        choices=Status.choices,
        default=Status.OK,
        help_text="How the call ended; a failed call has no tokens and says why in error.",
    )
    error = models.TextField(blank=True, help_text="The server's words when it did not answer.")
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["experiment_id", "round", "id"]
        constraints = [
            models.UniqueConstraint(fields=["experiment", "key"], name="modelcall_unique_key"),
            models.CheckConstraint(
                condition=Q(tokens_cached__lte=models.F("tokens_in")),
                name="modelcall_cached_within_input",
            ),
        ]
        indexes = [
            # Stability: "the latest call of E by role R before this one".
            models.Index(fields=["experiment", "role", "id"], name="modelcall_by_role"),
            # Usage views: "calls of E in round R" (the unique key serves "all of E").
            models.Index(fields=["experiment", "round"], name="modelcall_by_round"),
        ]

    def __str__(self) -> str:
        return f"{self.step} {self.role or '-'} R{self.round}: {self.tokens_in} in"
