"""Held turns (issue 23 ask 6): what the output guard held, for the DM's review."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from campaigns.api.serializers.base import RoleListOutField, StrictSerializer, text_field
from campaigns.models import Turn


class QuoteSerializer(serializers.Serializer):
    key = serializers.CharField(help_text='The quoted source: "turn:ID", "secret:ROLE", "lore:ID".')
    label = serializers.CharField()
    words = serializers.IntegerField(help_text="Words in the verbatim run.")
    start = serializers.IntegerField(help_text="Where the run starts in `original`.")
    end = serializers.IntegerField()
    readable = serializers.BooleanField(help_text="Whether you may read the source's excerpt.")
    source = serializers.CharField(help_text="The source's excerpt around the run ('' if not).")
    source_start = serializers.IntegerField(required=False, help_text="The run in `source`.")
    source_end = serializers.IntegerField(required=False)


class HeldTurnSerializer(serializers.ModelSerializer):
    review_audience = RoleListOutField(
        source="visibility", read_only=True, help_text="Who reviews it while it is held."
    )
    meant_for = serializers.SerializerMethodField(help_text="Its audience once published.")
    original = serializers.SerializerMethodField(help_text="The text as the model wrote it.")
    quotes = serializers.SerializerMethodField()

    class Meta:
        model = Turn
        fields = [
            "id",
            "seq",
            "round",
            "speaker",
            "kind",
            "content",
            "review_audience",
            "meant_for",
            "original",
            "quotes",
            "held_at",
        ]
        read_only_fields = fields

    def _hold(self, turn):
        holds = getattr(turn, "open_holds", None)
        return holds[0] if holds else None

    @extend_schema_field(serializers.ListField(child=serializers.CharField(), allow_null=True))
    def get_meant_for(self, turn):
        hold = self._hold(turn)
        return hold.visibility if hold is not None else None

    @extend_schema_field(serializers.CharField())
    def get_original(self, turn):
        hold = self._hold(turn)
        return hold.original if hold is not None else turn.content

    @extend_schema_field(QuoteSerializer(many=True))
    def get_quotes(self, turn):
        return getattr(turn, "shown_quotes", [])


class HeldEditSerializer(StrictSerializer):
    content = text_field(help_text="The corrected text (at most the experiment's content limit).")


class HeldPublishSerializer(StrictSerializer):
    content = text_field(
        required=False,
        help_text="Omitted: publish the text as it stands; given: edit, then publish.",
    )
