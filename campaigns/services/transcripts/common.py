"""The transcript format's name and the keys each element may have."""

from __future__ import annotations

from django.core.exceptions import ValidationError

FORMAT = "babel-transcript/1"
TOP_KEYS = {"format", "experiment", "participants", "turns", "lore", "facts"}
EXPERIMENT_KEYS = {"name", "hook", "rules", "config", "status"}
PARTICIPANT_KEYS = {"role", "kind", "model", "bio", "identity", "secret", "reveal_round", "order"}
TURN_KEYS = {"round", "speaker", "kind", "content", "visibility", "tags", "hinge", "needs_review"}
LORE_KEYS = {
    "term",
    "category",
    "definition",
    "audience",
    "status",
    "origin",
    "locked",
    "first_seen_round",
    "last_seen_round",
    "mention_count",
    "valid_from_round",
    "invalid_from_round",
    "source_turns",
}
LORE_INT_KEYS = ("first_seen_round", "last_seen_round", "mention_count")
LORE_OPTIONAL_INT_KEYS = ("valid_from_round", "invalid_from_round")


def reject_unknown(item: dict, allowed: set[str], prefix: str) -> None:
    unknown = sorted(set(item) - allowed)
    if unknown:
        raise ValidationError({f"{prefix}{key}": ["Unknown field."] for key in unknown})
