"""Turns: the log, read through the visibility selector and written by `turn_create`."""

from __future__ import annotations

from rest_framework import serializers

from campaigns.api.serializers.base import (
    MAX_ROUND,
    AudienceField,
    RoleListOutField,
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictSerializer,
    round_field,
    text_field,
)
from campaigns.models import Turn, TurnRevision, VisibilityChange


class TurnSerializer(serializers.ModelSerializer):
    """``id`` and ``seq`` are what the reader is shown (`numbering.shown_turns`): for a
    reader who does not read everything, both are the turn's position in their own
    readable stream (global counters would count the turns hidden from them)."""

    id = serializers.IntegerField(source="shown_id", read_only=True)
    seq = serializers.IntegerField(source="shown_seq", read_only=True)
    visibility = RoleListOutField(read_only=True)
    tags = serializers.ListField(child=serializers.CharField(), read_only=True)
    held = serializers.BooleanField(
        source="is_held",
        read_only=True,
        help_text="Held by the output guard for the DM's review (only its reviewers see it).",
    )

    class Meta:
        model = Turn
        fields = [
            "id",
            "seq",
            "round",
            "speaker",
            "kind",
            "content",
            "visibility",
            "tags",
            "hinge",
            "needs_review",
            "held",
            "tokens",
            "created_at",
        ]
        read_only_fields = fields


class TurnCreateSerializer(StrictSerializer):
    round = round_field(
        required=False,
        help_text=(
            "Omitted: the open round (the campaign clock). The owner and staff may post into "
            "a later round, which opens it; a player posts only into the open round."
        ),
    )
    speaker = StrictCharField(max_length=64, trim_whitespace=False)
    kind = StrictChoiceField(choices=Turn.Kind.choices)
    content = text_field(help_text="At most the experiment's content limit (default 100,000).")
    visibility = AudienceField(required=False, allow_null=True, default=None)
    tags = serializers.ListField(
        child=StrictCharField(trim_whitespace=False),
        required=False,
        default=list,
        help_text="The DM side only (tags open threads and invalidate lore for everyone).",
    )
    hinge = StrictBooleanField(
        required=False,
        default=False,
        help_text="The DM side only (a hinge is pinned into every reader's pack).",
    )


class TurnFilterSerializer(serializers.Serializer):
    """``?round=`` and ``?kind=`` of the turn list (``?as=`` is read by the view)."""

    round = serializers.IntegerField(min_value=0, max_value=MAX_ROUND, required=False)
    kind = serializers.ChoiceField(choices=Turn.Kind.choices, required=False)


class RevealSerializer(StrictSerializer):
    visibility = AudienceField(
        allow_null=True,
        help_text=(
            "The turn's new, wider audience: every role that reads it now plus at least one "
            "more, or null for everyone."
        ),
    )


class VisibilityChangeSerializer(serializers.ModelSerializer):
    old_visibility = RoleListOutField(read_only=True)
    new_visibility = RoleListOutField(read_only=True)

    class Meta:
        model = VisibilityChange
        fields = ["id", "turn", "old_visibility", "new_visibility", "round", "created_at"]
        read_only_fields = fields


class TurnEditSerializer(StrictSerializer):
    content = text_field(
        help_text=(
            "The turn's new text (non-empty, at most the experiment's content limit). The "
            "old text is kept as a revision; digests and lore follow."
        )
    )


class TurnRevisionSerializer(serializers.ModelSerializer):
    """An earlier text of a turn (no id: revisions are numbered by their place in the
    list, which holds only those the reader may read)."""

    edited_by = serializers.SerializerMethodField()

    class Meta:
        model = TurnRevision
        fields = ["old_content", "new_content", "edited_by", "created_at"]
        read_only_fields = fields

    def get_edited_by(self, revision) -> str:
        return revision.user.get_username() if revision.user is not None else ""


class TurnDetailSerializer(TurnSerializer):
    revisions = TurnRevisionSerializer(
        source="revision_list",
        many=True,
        read_only=True,
        help_text="Its earlier texts you read, oldest first (the DM side's edits).",
    )

    class Meta(TurnSerializer.Meta):
        fields = [*TurnSerializer.Meta.fields, "revisions"]
        read_only_fields = fields
