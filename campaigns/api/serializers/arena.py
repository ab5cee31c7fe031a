"""Planted facts and Arena runs, as the API shows them."""

from __future__ import annotations

from rest_framework import serializers

from campaigns.api.serializers.base import RoleListOutField, StrictSerializer
from campaigns.models import ArenaRun, Fact
from context_engine.types import STRATEGIES


class FactSerializer(serializers.ModelSerializer):
    id = serializers.CharField(source="key", read_only=True)
    audience = RoleListOutField(read_only=True)
    answer = serializers.ListField(child=serializers.CharField(), read_only=True)

    class Meta:
        model = Fact
        fields = ["id", "round", "audience", "answer", "question"]
        read_only_fields = fields


class ArenaStartSerializer(StrictSerializer):
    strategies = serializers.ListField(
        child=serializers.ChoiceField(choices=list(STRATEGIES)),
        required=False,
        allow_empty=False,
        max_length=len(STRATEGIES),
        help_text="Default: all seven.",
    )
    budgets = serializers.ListField(
        child=serializers.IntegerField(min_value=500, max_value=1_000_000),
        required=False,
        allow_empty=False,
        max_length=10,
        help_text="Total pack budgets in tokens. Default: 4000 8000 13000.",
    )
    every = serializers.IntegerField(
        required=False, min_value=1, max_value=10_000, help_text="Checkpoint every R rounds."
    )
    roles = serializers.ListField(
        child=serializers.CharField(max_length=64),
        required=False,
        allow_empty=False,
        max_length=100,
        help_text="Default: every role.",
    )
    judge = serializers.CharField(
        required=False, max_length=100, help_text="offline (default) or a model id."
    )


class ArenaResultSerializer(serializers.Serializer):
    strategy = serializers.CharField()
    budget = serializers.IntegerField()
    retention = serializers.FloatField()
    hinge_retention = serializers.FloatField()
    mean_tokens = serializers.FloatField()
    max_tokens = serializers.IntegerField()
    build_ms_median = serializers.FloatField()
    leaks = serializers.IntegerField()


class ArenaRecommendedSerializer(serializers.Serializer):
    strategy = serializers.CharField()
    budget = serializers.IntegerField()


class ArenaReportSerializer(serializers.Serializer):
    experiment = serializers.IntegerField()
    checkpoints = serializers.ListField(child=serializers.IntegerField())
    full_history_tokens = serializers.FloatField()
    results = ArenaResultSerializer(many=True)
    recommended = ArenaRecommendedSerializer(allow_null=True)


class ArenaRunSerializer(serializers.ModelSerializer):
    task_id = serializers.UUIDField(source="job_id", read_only=True, allow_null=True)
    params = serializers.JSONField(read_only=True)
    report = ArenaReportSerializer(
        read_only=True, help_text="What `manage.py arena --json` writes."
    )
    details = serializers.JSONField(
        read_only=True, help_text="The judge's note, retention per checkpoint and per role."
    )

    class Meta:
        model = ArenaRun
        fields = ["id", "task_id", "params", "report", "details", "created_at"]
        read_only_fields = fields
