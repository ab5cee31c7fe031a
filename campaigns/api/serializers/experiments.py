"""Experiments and participants: output shapes and input bodies."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from campaigns import validation
from campaigns.api.serializers.base import (
    MAX_INT,
    StrictCharField,
    StrictChoiceField,
    StrictFloatField,
    StrictIntegerField,
    StrictSerializer,
    round_field,
    text_field,
)
from campaigns.api.serializers.seats import InvitationSerializer
from campaigns.models import Experiment, Participant
from campaigns.models.campaign import MAX_CONTEXT_WINDOW, MAX_TIMEOUT_S, MIN_CONTEXT_WINDOW
from context_engine.llm.providers import FORMS
from context_engine.llm.usage import MAX_OUTPUT_TOKENS_LIMIT, TEMPERATURE_MAX
from context_engine.types import DEFAULT_BUDGETS, STRATEGIES

_config_properties: dict[str, dict] = {
    "strategy": {"type": "string", "enum": list(STRATEGIES)},
    "retrieval_preset": {"type": "string", "enum": list(validation.RETRIEVAL_PRESETS)},
    "budgets": {
        "type": "object",
        "properties": {
            name: {"type": "integer", "minimum": 0, "maximum": 1_000_000}
            for name in DEFAULT_BUDGETS
        },
        "additionalProperties": False,
    },
}
for _key, (_low, _high) in validation._INT_KEYS.items():
    _config_properties[_key] = {"type": "integer", "minimum": _low, "maximum": _high}
for _key in validation._BOOL_KEYS:
    _config_properties[_key] = {"type": "boolean"}
for _key in validation.MODEL_KEYS:
    _config_properties[_key] = {
        "type": "string",
        "minLength": 1,
        "maxLength": 100,
        "description": f"The memory workers' model: {FORMS}.",
    }
for _key in validation._URL_KEYS:
    _config_properties[_key] = {"type": "string", "format": "uri", "maxLength": 300}

CONFIG_SCHEMA = {
    "type": "object",
    "properties": _config_properties,
    "additionalProperties": False,
    "description": "Strategy, budgets, windows, models… Unknown keys are rejected.",
}


@extend_schema_field(CONFIG_SCHEMA)
class ConfigField(serializers.JSONField):
    """Validated by `campaigns.validation.clean_config` (errors name ``config.KEY``)."""


class ExperimentSerializer(serializers.ModelSerializer):
    config = ConfigField(read_only=True)

    class Meta:
        model = Experiment
        fields = [
            "id",
            "name",
            "hook",
            "rules",
            "config",
            "status",
            "current_round",
            "owner",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


class ExperimentCreateSerializer(StrictSerializer):
    name = StrictCharField(max_length=200)
    hook = text_field(required=False, default="")
    rules = text_field(required=False, default="")
    config = ConfigField(required=False, default=dict)
    status = StrictChoiceField(
        choices=Experiment.Status.choices, required=False, default=Experiment.Status.DRAFT
    )


class ExperimentUpdateSerializer(StrictSerializer):
    name = StrictCharField(max_length=200, required=False)
    hook = text_field(required=False)
    rules = text_field(required=False)
    config = ConfigField(required=False)
    status = StrictChoiceField(choices=Experiment.Status.choices, required=False)


class ParticipantSerializer(serializers.ModelSerializer):
    """``secret``, ``reveal_round`` and ``identity`` are null unless the reader is entitled
    to them; the view sets ``shown_secret`` / ``shown_reveal_round`` / ``shown_identity``
    from the selectors before rendering."""

    secret = serializers.CharField(source="shown_secret", allow_null=True, read_only=True)
    identity = serializers.CharField(source="shown_identity", allow_null=True, read_only=True)
    reveal_round = serializers.IntegerField(
        source="shown_reveal_round", allow_null=True, read_only=True
    )

    # The connection settings are the campaign editor's: null for anyone else (a player
    # has no business with the server's address, timeout or whether a key is stored).
    base_url = serializers.SerializerMethodField(help_text="The server's base URL (editors).")
    api_key_set = serializers.SerializerMethodField(
        help_text="Whether a key is stored (editors; the key itself is never shown)."
    )
    timeout_s = serializers.SerializerMethodField(help_text="Seconds one call may take (editors).")
    context_window = serializers.SerializerMethodField(
        help_text="The model's declared window in tokens (editors)."
    )

    @staticmethod
    def _connection_shown(participant: Participant) -> bool:
        return getattr(participant, "connection_shown", True)

    def get_base_url(self, participant: Participant) -> str | None:
        return participant.base_url if self._connection_shown(participant) else None

    def get_api_key_set(self, participant: Participant) -> bool | None:
        return bool(participant.api_key) if self._connection_shown(participant) else None

    def get_timeout_s(self, participant: Participant) -> int | None:
        return participant.timeout_s if self._connection_shown(participant) else None

    def get_context_window(self, participant: Participant) -> int | None:
        return participant.context_window if self._connection_shown(participant) else None

    class Meta:
        model = Participant
        fields = [
            "id",
            "role",
            "kind",
            "model",
            "bio",
            "identity",
            "secret",
            "reveal_round",
            "order",
            "user",
            "temperature",
            "max_output_tokens",
            "base_url",
            "api_key_set",
            "timeout_s",
            "context_window",
        ]
        read_only_fields = fields


def _provider_fields(*, create: bool) -> dict:
    """The model's provider settings (checked against the server when set)."""
    defaults = {"required": False}
    return {
        "base_url": StrictCharField(
            max_length=300,
            allow_blank=True,
            **defaults,
            **({"default": ""} if create else {}),
            help_text="The server's base URL; blank = the preset's (or OPENAI_BASE_URL).",
        ),
        "api_key": StrictCharField(
            max_length=500,
            allow_blank=True,
            allow_null=not create,
            write_only=True,
            **defaults,
            **({"default": ""} if create else {}),
            help_text="The server's key, never shown back; on update blank keeps it, null clears.",
        ),
        "timeout_s": StrictIntegerField(
            min_value=1,
            max_value=MAX_TIMEOUT_S,
            allow_null=True,
            **defaults,
            **({"default": None} if create else {}),
            help_text="Seconds one call may take; null = the preset's (CPU presets longer).",
        ),
        "context_window": StrictIntegerField(
            min_value=MIN_CONTEXT_WINDOW,
            max_value=MAX_CONTEXT_WINDOW,
            allow_null=True,
            **defaults,
            **({"default": None} if create else {}),
            help_text="The model's window in tokens; null = read from the server.",
        ),
    }


# The provider settings as serializer bases (on create: with defaults; on update: absent
# means unchanged, and a null key clears the stored one).
ProviderCreateFields = type(
    "ProviderCreateFields", (StrictSerializer,), _provider_fields(create=True)
)
ProviderUpdateFields = type(
    "ProviderUpdateFields", (StrictSerializer,), _provider_fields(create=False)
)


class ParticipantCreatedSerializer(ParticipantSerializer):
    """A new participant, with the invitation its ``user`` became (null without one)."""

    invitation = InvitationSerializer(source="shown_invitation", read_only=True, allow_null=True)

    class Meta(ParticipantSerializer.Meta):
        fields = [*ParticipantSerializer.Meta.fields, "invitation"]
        read_only_fields = fields


class ParticipantCreateSerializer(ProviderCreateFields):
    role = StrictCharField(max_length=64, trim_whitespace=False)
    kind = StrictChoiceField(
        choices=Participant.Kind.choices, required=False, default=Participant.Kind.PLAYER
    )
    model = StrictCharField(
        max_length=100,
        required=False,
        default="human",
        help_text=f"'human', or the model: {FORMS}.",
    )
    bio = text_field(required=False, default="")
    identity = text_field(required=False, default="")
    secret = text_field(required=False, default="")
    reveal_round = round_field(required=False, allow_null=True, default=None)
    order = StrictIntegerField(min_value=0, max_value=MAX_INT, required=False)
    user = StrictIntegerField(
        min_value=1,
        max_value=2**63 - 1,
        required=False,
        allow_null=True,
        default=None,
        help_text=(
            "Offer this seat to a user (by id): an invitation they accept or decline "
            "(`GET /api/invitations/`); the seat stays empty until they accept. The answer "
            "is the same whether or not the id names a user."
        ),
    )
    temperature = StrictFloatField(
        min_value=0.0,
        max_value=TEMPERATURE_MAX,
        required=False,
        allow_null=True,
        default=None,
        help_text="Sampling temperature, 0–2; null = the provider's default.",
    )
    max_output_tokens = StrictIntegerField(
        min_value=1,
        max_value=MAX_OUTPUT_TOKENS_LIMIT,
        required=False,
        allow_null=True,
        default=None,
        help_text=f"Longest answer in tokens, 1–{MAX_OUTPUT_TOKENS_LIMIT}; null = the default.",
    )


class ParticipantUpdateSerializer(ProviderUpdateFields):
    """The model settings of a participant (what a running campaign may change)."""

    model = StrictCharField(max_length=100, required=False)
    temperature = StrictFloatField(
        min_value=0.0, max_value=TEMPERATURE_MAX, required=False, allow_null=True
    )
    max_output_tokens = StrictIntegerField(
        min_value=1, max_value=MAX_OUTPUT_TOKENS_LIMIT, required=False, allow_null=True
    )


class ConnectionTestSerializer(ProviderUpdateFields):
    """Optional settings to test instead of the stored ones (nothing is saved)."""

    model = StrictCharField(max_length=100, required=False)
    context_window = None  # not a connection setting


class ConnectionWindowSerializer(serializers.Serializer):
    tokens = serializers.IntegerField()
    source = serializers.CharField()
    output_shares = serializers.BooleanField()


class ConnectionSerializer(serializers.Serializer):
    """What "Test connection" found (the key is never part of it)."""

    ok = serializers.BooleanField()
    model = serializers.CharField()
    server = serializers.CharField()
    seconds = serializers.FloatField()
    models = serializers.ListField(child=serializers.CharField())
    window = ConnectionWindowSerializer(allow_null=True)
    field = serializers.CharField(allow_null=True, help_text="The setting to fix.")
    error = serializers.CharField(allow_null=True)
    warnings = serializers.ListField(child=serializers.CharField())
