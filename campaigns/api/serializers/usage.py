"""Model usage: the ``?round=`` filter and the per-agent / per-round shapes (read only)."""

from __future__ import annotations

from rest_framework import serializers

from campaigns.api.serializers.base import MAX_ROUND


class UsageFilterSerializer(serializers.Serializer):
    round = serializers.IntegerField(min_value=0, max_value=MAX_ROUND, required=False)


class UsageTotalsSerializer(serializers.Serializer):
    calls = serializers.IntegerField()
    failed = serializers.IntegerField(
        help_text="Of those calls, the ones that did not answer (timed out, too long, failed)."
    )
    tokens_in = serializers.IntegerField()
    tokens_cached = serializers.IntegerField()
    tokens_out = serializers.IntegerField()
    saving_tokens = serializers.IntegerField(help_text="Input tokens served from a cache.")
    cached_share = serializers.FloatField()


class UsageAgentSerializer(UsageTotalsSerializer):
    role = serializers.CharField(help_text="Blank for memory workers.")
    model = serializers.CharField()
    prefix_stable_share = serializers.FloatField(
        allow_null=True,
        help_text="Mean share of prompt bytes identical to the agent's previous call.",
    )


class UsageRoundSerializer(UsageTotalsSerializer):
    round = serializers.IntegerField()
    prefix_stable_share = serializers.FloatField(allow_null=True)


class UsageSerializer(serializers.Serializer):
    round = serializers.IntegerField(allow_null=True)
    agents = UsageAgentSerializer(many=True)
    total = UsageTotalsSerializer()
    rounds = UsageRoundSerializer(many=True)
