"""Shared serializer pieces. Serializers only shape data; services validate meaning."""

from __future__ import annotations

import math
from collections.abc import Mapping

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

# Counters are stored as PositiveIntegerField (≤ 2³¹−1 on PostgreSQL); a bigger value is
# a 400 here rather than a database error. Rounds have a far lower bound of their own.
MAX_INT = 2**31 - 1
MAX_ROUND = settings.BABEL_MAX_ROUND

ROLE_LIST_SCHEMA = {
    "type": "array",
    "items": {"type": "string"},
    "minItems": 1,
    "nullable": True,
    "description": "null = everyone; otherwise the roles that may read it.",
}


class StrictSerializer(serializers.Serializer):
    # An input serializer that rejects fields it does not know, naming each one: a typo
    # such as ``visiblity`` must not silently store a public turn. (A comment, not a
    # docstring: drf-spectacular would copy a docstring into every subclass's schema.)

    def to_internal_value(self, data):
        if isinstance(data, Mapping):
            writable = {name for name, field in self.fields.items() if not field.read_only}
            unknown = sorted(str(key) for key in data if key not in writable)
            if unknown:
                raise serializers.ValidationError({key: ["Unknown field."] for key in unknown})
        return super().to_internal_value(data)


@extend_schema_field(ROLE_LIST_SCHEMA)
class AudienceField(serializers.JSONField):
    """Visibility / audience: passed through as sent; the service validates it against the
    experiment's roles (non-list, empty list, unknown role → 400 naming the field)."""


@extend_schema_field({"type": "array", "items": {"type": "string"}, "nullable": True})
class RoleListOutField(serializers.JSONField):
    """A stored visibility / audience, read back (null = everyone)."""


# JSON bodies are typed: DRF would quietly turn 7 into "7", "7" into 7 and "yes" into True.
# The API answers what the schema says instead — a string is a string — so a client's
# type mistake is a 400 naming the field, not a silently converted value.


class StrictCharField(serializers.CharField):
    """Strings only, and ``max_length`` holds for the text as sent (as the schema says),
    not only after DRF trims it."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        if self.max_length is not None and len(data) > self.max_length:
            self.fail("max_length", max_length=self.max_length)
        return super().to_internal_value(data)


class StrictIntegerField(serializers.IntegerField):
    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictFloatField(serializers.FloatField):
    """A JSON number (not a string, not a boolean), finite."""

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        if not math.isfinite(data):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class StrictChoiceField(serializers.ChoiceField):
    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid_choice", input=data)
        return super().to_internal_value(data)


class StrictPrimaryKeyField(serializers.PrimaryKeyRelatedField):
    """An id as a JSON integer; an out-of-range id simply does not exist (never a DB error)."""

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("incorrect_type", data_type=type(data).__name__)
        if not 1 <= data <= 2**63 - 1:
            self.fail("does_not_exist", pk_value=data)
        return super().to_internal_value(data)


def round_field(**kwargs) -> serializers.IntegerField:
    return StrictIntegerField(min_value=0, max_value=MAX_ROUND, **kwargs)


def text_field(**kwargs) -> serializers.CharField:
    """Free text kept exactly as sent (no whitespace trimming, blank allowed)."""
    kwargs.setdefault("allow_blank", True)
    return StrictCharField(trim_whitespace=False, **kwargs)
