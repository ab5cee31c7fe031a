"""World Bible entries: read through `lore_visible_to`, written by the lore services."""

from __future__ import annotations

from rest_framework import serializers

from campaigns.api.serializers.base import (
    AudienceField,
    RoleListOutField,
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictSerializer,
    round_field,
    text_field,
)
from campaigns.models import LORE_FIELDS, LoreEntry


class LoreSerializer(serializers.ModelSerializer):
    """``id`` is what the reader is shown (`numbering.shown_lore`): for a reader who does
    not read everything, the entry's position among the entries they read."""

    id = serializers.IntegerField(source="shown_id", read_only=True)
    audience = RoleListOutField(read_only=True)

    class Meta:
        model = LoreEntry
        fields = ["id", *LORE_FIELDS, "created_at", "updated_at"]
        read_only_fields = fields


class LoreCreateSerializer(StrictSerializer):
    term = StrictCharField(max_length=200)
    category = StrictChoiceField(
        choices=LoreEntry.Category.choices, required=False, default=LoreEntry.Category.TERM
    )
    definition = text_field(required=False, default="")
    audience = AudienceField(required=False, allow_null=True, default=None)


class LoreUpdateSerializer(StrictSerializer):
    """The DM's corrections: a definition, a status (confirm / reject), a lock."""

    definition = text_field(required=False)
    status = StrictChoiceField(choices=LoreEntry.Status.choices, required=False)
    locked = StrictBooleanField(required=False)
    invalid_from_round = round_field(
        required=False,
        allow_null=True,
        help_text="The story round from which the fact is no longer true (null: true again).",
    )
