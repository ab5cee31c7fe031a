"""Summaries, prompt packs (context), commands and background jobs."""

from __future__ import annotations

from rest_framework import serializers

from campaigns.api.serializers.base import (
    RoleListOutField,
    StrictCharField,
    StrictChoiceField,
    StrictSerializer,
)
from campaigns.models import ContextEvent, Job, Summary


class SummarySerializer(serializers.ModelSerializer):
    """Numbers as the reader is shown them (`numbering.shown_summaries`): positions in
    their own readable summaries and turns unless they read everything."""

    id = serializers.IntegerField(source="shown_id", read_only=True)
    covered_seq = serializers.IntegerField(source="shown_covered_seq", read_only=True)
    audience = RoleListOutField(source="shown_audience", read_only=True)
    sections = serializers.ListField(
        child=serializers.ListField(child=serializers.CharField()),
        read_only=True,
        help_text="[[heading, body], …]",
    )
    source_turn_ids = serializers.ListField(
        child=serializers.IntegerField(), source="shown_source_ids", read_only=True
    )

    class Meta:
        model = Summary
        fields = [
            "id",
            "kind",
            "audience",
            "round_from",
            "round_to",
            "covered_seq",
            "text",
            "sections",
            "source_turn_ids",
            "method",
            "model",
            "version",
            "created_at",
        ]
        read_only_fields = fields


class ContextSectionSerializer(serializers.Serializer):
    name = serializers.CharField()
    budget = serializers.IntegerField(help_text="Its own share of the total budget.")
    borrowed = serializers.IntegerField(
        help_text="Tokens used beyond its share, lent by sections that left theirs unused."
    )
    tokens = serializers.IntegerField()
    text = serializers.CharField(allow_blank=True)
    trimmed = serializers.BooleanField()


class ChatMessageSerializer(serializers.Serializer):
    role = serializers.CharField()
    content = serializers.CharField(allow_blank=True)


class TrimEventSerializer(serializers.Serializer):
    section = serializers.CharField()
    ref = serializers.CharField(allow_blank=True)
    action = serializers.CharField()
    reason = serializers.CharField(allow_blank=True)
    tokens_saved = serializers.IntegerField()


class BudgetCapSerializer(serializers.Serializer):
    """Why the pack's total budget is what it is (`context_engine.window.fit`)."""

    campaign_budget = serializers.IntegerField()
    budget = serializers.IntegerField(help_text="The total the sections share.")
    capped = serializers.BooleanField(help_text="Less than the campaign's, to fit the window.")
    window = serializers.IntegerField(help_text="The model's context window in tokens.")
    reserve = serializers.IntegerField(help_text="Tokens kept for the answer.")
    margin = serializers.IntegerField(help_text="Kept for tokenizer differences and templates.")
    source = serializers.CharField(help_text="Where the window came from.")
    reason = serializers.CharField()


class ContextSerializer(serializers.Serializer):
    """The shape of `context_engine.render.pack_to_dict` (schema only)."""

    role = serializers.CharField()
    strategy = serializers.CharField()
    budget = serializers.IntegerField(help_text="Total token budget.")
    total_tokens = serializers.IntegerField()
    pressure = serializers.FloatField()
    strain = serializers.ChoiceField(choices=["normal", "strain_1", "strain_2", "strain_3"])
    sections = ContextSectionSerializer(many=True)
    messages = ChatMessageSerializer(many=True)
    untrimmed_tokens = serializers.IntegerField(required=False, help_text="With ?debug=true.")
    trim_log = TrimEventSerializer(many=True, required=False, help_text="With ?debug=true.")
    warnings = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="With ?debug=true."
    )
    cap = BudgetCapSerializer(
        required=False, help_text="When the role's model window is known (declared or read)."
    )


RETRIEVAL_CHOICES = [
    ("search", "/search QUERY"),
    ("lore", "/lore TERM"),
    ("timeline", "/timeline FROM..TO"),
]


class CommandSerializer(StrictSerializer):
    command = StrictChoiceField(choices=[*ContextEvent.Command.choices, *RETRIEVAL_CHOICES])
    role = StrictCharField(
        max_length=64,
        required=False,
        allow_null=True,
        default=None,
        help_text=(
            "One agent's memory; omitted = every agent. For search/lore/timeline: the role "
            "to search as (a player: only their own), whose next pack gets the results."
        ),
    )
    query = StrictCharField(
        max_length=200,
        required=False,
        allow_null=True,
        default=None,
        help_text="search: text; lore: a term; timeline: rounds FROM..TO. Only for those.",
    )


class RetrievalTurnSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    seq = serializers.IntegerField()
    round = serializers.IntegerField()
    speaker = serializers.CharField()
    kind = serializers.CharField()
    text = serializers.CharField()


class RetrievalLoreSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    term = serializers.CharField()
    category = serializers.CharField()
    definition = serializers.CharField()
    status = serializers.CharField()


class RetrievalResultSerializer(serializers.Serializer):
    """Active retrieval, out of band: only what the role may read (never a hidden count)."""

    command = serializers.CharField()
    query = serializers.CharField()
    role = serializers.CharField(allow_null=True)
    turns = RetrievalTurnSerializer(many=True)
    lore = RetrievalLoreSerializer(many=True)
    pinned = serializers.BooleanField(help_text="Also placed in the role's next pack.")


class EmptySerializer(StrictSerializer):
    """A body with no fields (``{}`` or nothing); anything else is an unknown field."""


class JobSerializer(serializers.ModelSerializer):
    task_id = serializers.UUIDField(source="id", read_only=True)
    result = serializers.JSONField(source="shown_result", read_only=True, allow_null=True)
    message = serializers.CharField(source="shown_message", read_only=True)

    class Meta:
        model = Job
        fields = [
            "task_id",
            "experiment",
            "kind",
            "status",
            "progress",
            "message",
            "result",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields
