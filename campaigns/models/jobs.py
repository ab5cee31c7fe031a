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
        PLAY = "play", "Play rounds"
        CHECKPOINT = "checkpoint", "/checkpoint"
        COMPRESS = "compress", "/compress"
        CLEAR = "clear", "/clear"
        SUMMARIZE = "summarize", "Summarize"
        ARENA = "arena", "Arena"
        REGENERATE = "regenerate", "Regenerate a step"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        WAITING = "waiting", "Waiting for a human"
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
                condition=Q(kind="round", status__in=["pending", "running", "waiting"]),
                name="job_one_active_round",
            ),
            # One "Play N rounds" at a time per experiment.
            models.UniqueConstraint(
                fields=["experiment"],
                condition=Q(kind="play", status__in=["pending", "running", "waiting"]),
                name="job_one_active_play",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.status} ({self.progress}%)"

    @property
    def status_line(self) -> str:
        """Status and progress only: what a reader who may not see the message is shown."""
        if self.status == self.Status.RUNNING:
            return f"{self.get_kind_display()}: running, {self.progress}%"
        if self.status == self.Status.WAITING:
            return f"{self.get_kind_display()}: waiting for a human, {self.progress}%"
        return f"{self.get_kind_display()}: {self.get_status_display().lower()}"


class RoundStep(models.Model):
    """One step of a relay round, committed with its turns (SPEC §6, issue 11).

    ``(experiment, round, step, speaker)`` is the step's idempotency key: a step's turns
    and this row commit in one transaction, so a second commit of the same step (a task
    redelivered after a crash, a resumed round racing a slow worker) fails on the unique
    constraint and stores nothing. A round resumes from the first step with no row.
    """

    class Status(models.TextChoices):
        OK = "ok", "Stored"
        FAILED = "failed", "Failed (a DM-only note says why)"
        SKIPPED = "skipped", "Skipped"
        TIMED_OUT = "timed_out", "A human did not act in time"

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="round_steps")
    round = models.PositiveIntegerField()
    step = models.CharField(max_length=16, help_text="narrate, act or answer.")
    speaker = models.CharField(max_length=64, help_text="The role whose step this is.")
    status = models.CharField(max_length=16, choices=Status.choices)
    model = models.CharField(max_length=100, blank=True)
    turns = models.JSONField(default=list, blank=True, help_text="Ids of the step's turns.")
    detail = models.JSONField(default=dict, blank=True, help_text="Reason, error, review…")
    job = models.ForeignKey(
        "Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="round_steps"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["experiment_id", "round", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["experiment", "round", "step", "speaker"],
                name="roundstep_idempotency_key",
            ),
        ]

    def __str__(self) -> str:
        return f"R{self.round} {self.step} {self.speaker} ({self.status})"

    def as_result(self) -> dict:
        """The step as the round Job's ``result["steps"]`` lists it."""
        return {
            "step": self.step,
            "role": self.speaker,
            "model": self.model,
            "status": self.status,
            "turns": list(self.turns),
            **self.detail,
        }


class TranscriptUpload(models.Model):
    """A transcript file uploaded in the console, imported in the background (issue 24,
    ask 5) with its progress and, if it fails, the importer's field-named errors.

    Not a `Job`: a job belongs to an experiment, and this one's experiment exists only
    once the import succeeds. ``payload`` holds the file until the import has run, then
    is emptied; a failed import stores nothing but this row (the errors it shows).
    """

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting to start"
        RUNNING = "running", "Importing"
        SUCCEEDED = "succeeded", "Imported"
        FAILED = "failed", "Failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="transcript_uploads"
    )
    filename = models.CharField(max_length=255, blank=True)
    size = models.PositiveBigIntegerField(default=0, help_text="Bytes uploaded.")
    payload = models.BinaryField(blank=True, default=b"", help_text="Emptied once imported.")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    progress = models.PositiveSmallIntegerField(default=0, help_text="0–100.")
    message = models.CharField(max_length=500, blank=True)
    errors = models.JSONField(default=dict, blank=True, help_text="{field: [message, …]}")
    experiment = models.ForeignKey(
        Experiment, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(progress__lte=100), name="transcript_upload_progress_max_100"
            ),
        ]

    def __str__(self) -> str:
        return f"upload {self.filename!r} {self.status} ({self.progress}%)"

    @property
    def running(self) -> bool:
        return self.status in (self.Status.PENDING, self.Status.RUNNING)
