"""Shared serializer pieces. Serializers only shape data; services validate meaning."""

from __future__ import annotations

from collections.abc import Mapping

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

# Round numbers and similar counters are stored as PositiveIntegerField (≤ 2³¹−1 on
# PostgreSQL); a bigger value is a 400 here rather than a database error.
MAX_INT = 2**31 - 1

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


def round_field(**kwargs) -> serializers.IntegerField:
    return serializers.IntegerField(min_value=0, max_value=MAX_INT, **kwargs)


def text_field(**kwargs) -> serializers.CharField:
    """Free text kept exactly as sent (no whitespace trimming, blank allowed)."""
    kwargs.setdefault("allow_blank", True)
    return serializers.CharField(trim_whitespace=False, **kwargs)
