"""The Arena: facts a campaign should remember, questions it should answer, stored runs."""

from __future__ import annotations

from django.db import models

from campaigns.models.campaign import Experiment
from campaigns.models.jobs import Job


class Fact(models.Model):
    """A planted fact the Arena scores packs on (SPEC §5.7, the transcript's ``facts``).

    Introduced in ``round``, readable by ``audience`` (null = everyone, same semantics as
    visibility), known when every string of ``answer`` appears. ``key`` is the fact's id
    in the transcript; ``position`` keeps the file's order for a byte-identical export.
    """

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="facts")
    key = models.CharField(max_length=200, help_text="The fact's id in the transcript.")
    position = models.PositiveIntegerField(default=0)
    round = models.PositiveIntegerField(default=0)
    audience = models.JSONField(null=True, blank=True, help_text="null = everyone.")
    answer = models.JSONField(default=list, help_text="Strings that must all appear.")
    question = models.TextField()

    class Meta:
        ordering = ["experiment_id", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["experiment", "key"], name="fact_unique_key"),
        ]

    def __str__(self) -> str:
        return self.key


class Question(models.Model):
    """An evidence-recall question (SPEC §5.7, the transcript's ``questions``).

    ``evidence`` is the list of turn ids that hold the answer (the transcript names them
    by turn key; export maps them back). ``role`` is whose pack is asked ("" = every
    non-judge role that can read some evidence). ``position`` keeps the file's order for
    a byte-identical export.
    """

    # No index of its own: `question_unique_position` starts with it.
    experiment = models.ForeignKey(
        Experiment, on_delete=models.CASCADE, related_name="questions", db_index=False
    )
    position = models.PositiveIntegerField(default=0)
    question = models.TextField()
    answer = models.TextField()
    evidence = models.JSONField(default=list, help_text="Turn ids, in the file's order.")
    category = models.CharField(max_length=64)
    role = models.CharField(max_length=64, blank=True, default="", help_text="'' = every reader.")
    asked_at_round = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["experiment_id", "position", "id"]
        constraints = [
            # Also serves "the questions of experiment E in file order" (export, Arena).
            models.UniqueConstraint(
                fields=["experiment", "position"], name="question_unique_position"
            ),
        ]

    def __str__(self) -> str:
        return self.question[:60]


class ArenaRun(models.Model):
    """One Arena run of an experiment: its parameters and its stored report."""

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="arena_runs")
    job = models.OneToOneField(
        Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="arena_run"
    )
    params = models.JSONField(default=dict, blank=True)
    report = models.JSONField(default=dict, blank=True, help_text="The --json report.")
    details = models.JSONField(
        default=dict, blank=True, help_text="Judge note, retention per checkpoint, counts."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            # The arena page and GET …/arena/: "the newest runs of experiment E".
            models.Index(fields=["experiment", "-created_at"], name="arena_run_newest"),
        ]

    def __str__(self) -> str:
        return f"arena run {self.pk} of experiment {self.experiment_id}"
