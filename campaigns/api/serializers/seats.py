"""Invitations: the owner's view of a campaign's offers, and the invitee's of theirs."""

from __future__ import annotations

from rest_framework import serializers

from campaigns.api.serializers.base import StrictCharField, StrictIntegerField, StrictSerializer
from campaigns.models import Invitation

MAX_ID = 2**63 - 1


class InvitationSerializer(serializers.ModelSerializer):
    """An invitation as its campaign's owner reads it: the invitee as they named them
    (a username, or ``#<id>``) and never the account it resolved to — an invitation to
    no one reads exactly like one to a real user until that user answers."""

    role = serializers.CharField(source="participant.role", read_only=True)

    class Meta:
        model = Invitation
        fields = ["id", "role", "invitee", "status", "created_at", "responded_at"]
        read_only_fields = fields


class InvitationCreateSerializer(StrictSerializer):
    role = StrictCharField(max_length=64, help_text="The seat: one of the campaign's roles.")
    username = StrictCharField(
        max_length=150, required=False, help_text="Whom to invite (or give `user`)."
    )
    user = StrictIntegerField(
        min_value=1, max_value=MAX_ID, required=False, help_text="Whom to invite, by user id."
    )


class ReceivedInvitationSerializer(serializers.ModelSerializer):
    """An open invitation as its invitee reads it: all they learn of the campaign before
    accepting is its name, the seat offered and who offered it."""

    campaign = serializers.CharField(source="experiment.name", read_only=True)
    role = serializers.CharField(source="participant.role", read_only=True)
    invited_by = serializers.CharField(
        source="invited_by.username", read_only=True, allow_null=True, default=None
    )

    class Meta:
        model = Invitation
        fields = ["id", "campaign", "role", "invited_by", "status", "created_at"]
        read_only_fields = fields


class InvitationAnswerSerializer(serializers.ModelSerializer):
    """The answer to an accept or decline: with ``experiment`` (its id) once accepted."""

    experiment = serializers.SerializerMethodField()
    role = serializers.CharField(source="participant.role", read_only=True)

    class Meta:
        model = Invitation
        fields = ["id", "status", "role", "experiment"]
        read_only_fields = fields

    def get_experiment(self, obj) -> int | None:
        return obj.experiment_id if obj.status == Invitation.Status.ACCEPTED else None
