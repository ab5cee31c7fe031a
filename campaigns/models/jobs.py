"""Background work with progress (rounds, commands, memory jobs, arena runs)."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from campaigns.models.campaign import Experiment


class Job(models.Model):
    """Background work a user started (a round, a /checkpoint…), with its progress.

    `GET /api/tasks/{id}/` and the console's progress bars read this, never Celery's own
    result store, so task status is authorised like everything else in the experiment.
    """

    class Kind(models.TextChoices):
        ROUND = "round", "Round"
        CHECKPOINT = "checkpoint", "/checkpoint"
        COMPRESS = "compress", "/compress"
        CLEAR = "clear", "/clear"
        SUMMARIZE = "summarize", "Summarize"
        ARENA = "arena", "Arena"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="jobs")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    progress = models.PositiveSmallIntegerField(default=0, help_text="0–100.")
    message = models.CharField(max_length=500, blank=True)
    result = models.JSONField(default=dict, blank=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(progress__lte=100), name="job_progress_max_100"),
            # One round at a time per experiment, even if two starts race past the lock.
            models.UniqueConstraint(
                fields=["experiment"],
                condition=Q(kind="round", status__in=["pending", "running"]),
                name="job_one_active_round",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.status} ({self.progress}%)"

    @property
    def status_line(self) -> str:
        """Status and progress only: what a reader who may not see the message is shown."""
        if self.status == self.Status.RUNNING:
            return f"{self.get_kind_display()}: running, {self.progress}%"
        return f"{self.get_kind_display()}: {self.get_status_display().lower()}"
