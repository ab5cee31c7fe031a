"""Maintenance services run by background tasks."""

from __future__ import annotations

from campaigns.models import Turn
from context_engine import tokens


def turn_recount_tokens(*, turn_id: int) -> int | None:
    """Store the turn's token count; returns it, or None if the turn is gone."""
    turn = Turn.objects.filter(pk=turn_id).only("content", "tokens").first()
    if turn is None:
        return None
    counted = tokens.count(turn.content)
    if turn.tokens != counted:
        Turn.objects.filter(pk=turn_id).update(tokens=counted)
    return counted
