"""What the output leak guard held (SPEC §4, issue 23 ask 6), and what the DM did with it."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from campaigns.models.campaign import Experiment, Turn


class OutputHold(models.Model):
    """A model's answer held for the DM's review because it quoted hidden text.

    The held turn itself is a `Turn` with ``held_at`` set (and, while held, a stored
    visibility no wider than the review audience); this row keeps what it was meant for
    (``visibility``), the text as the model wrote it and the quotes the guard found, each
    naming its source. It outlives the decision: a discarded turn is deleted, its text
    stays here for the owner.
    """

    class Status(models.TextChoices):
        HELD = "held", "Held for review"
        PUBLISHED = "published", "Published"
        DISCARDED = "discarded", "Discarded"

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="holds")
    turn = models.ForeignKey(
        Turn, null=True, blank=True, on_delete=models.SET_NULL, related_name="holds"
    )
    round = models.PositiveIntegerField()
    seq = models.PositiveIntegerField()
    speaker = models.CharField(max_length=64)
    kind = models.CharField(max_length=16)
    visibility = models.JSONField(
        null=True, blank=True, help_text="The audience the answer was meant for (null = everyone)."
    )
    original = models.TextField(help_text="The answer as the model wrote it.")
    quotes = models.JSONField(
        default=list,
        help_text=(
            "The guard's findings: [{key, label, words, start, end, source_start, source_end,"
            " source}] — offsets into `original` and into the source text ``source``."
        ),
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.HELD)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["experiment_id", "seq", "id"]
        constraints = [
            # One open hold per turn: a rerun of the step cannot hold it twice.
            models.UniqueConstraint(
                fields=["turn"], condition=Q(status="held"), name="one_open_hold_per_turn"
            ),
        ]
        indexes = [
            # The review list: "holds of experiment E still held, in seq order".
            models.Index(
                fields=["experiment", "seq"],
                condition=Q(status="held"),
                name="hold_open_by_seq",
            ),
        ]

    def __str__(self) -> str:
        return f"hold of #{self.seq} R{self.round} {self.speaker} ({self.status})"
