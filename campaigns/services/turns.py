"""Write services for turns: validation, seq assignment, cached token counts."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max

from campaigns.models import Experiment, Turn
from campaigns.services.validation import (
    clean_content,
    clean_kind,
    clean_round,
    clean_speaker,
    clean_tags,
    clean_visibility,
    max_content_chars,
)
from context_engine import tokens


def turn_fields(
    *,
    roles: set[str],
    round: object,
    speaker: object,
    kind: object,
    content: object,
    visibility: object = None,
    tags: object = None,
    hinge: object = False,
    content_limit: int,
) -> dict:
    """Validate one turn's fields; returns them cleaned, token count included."""
    if not isinstance(hinge, bool):
        raise ValidationError({"hinge": ["Hinge must be true or false."]})
    cleaned = {
        "round": clean_round(round),
        "speaker": clean_speaker(speaker, roles),
        "kind": clean_kind(kind),
        "content": clean_content(content, limit=content_limit),
        "visibility": clean_visibility(visibility, roles),
        "tags": clean_tags(tags),
        "hinge": hinge,
    }
    cleaned["tokens"] = tokens.count(cleaned["content"])
    return cleaned


@transaction.atomic
def turn_create(
    *,
    experiment: Experiment,
    round: int,
    speaker: str,
    kind: str,
    content: str,
    visibility: list[str] | None = None,
    tags: list[str] | None = None,
    hinge: bool = False,
    needs_review: bool = False,
) -> Turn:
    """Store one turn with the next seq. Locks the experiment row to serialise seqs."""
    locked = Experiment.objects.select_for_update().get(pk=experiment.pk)
    roles = set(locked.participants.values_list("role", flat=True))
    cleaned = turn_fields(
        roles=roles,
        round=round,
        speaker=speaker,
        kind=kind,
        content=content,
        visibility=visibility,
        tags=tags,
        hinge=hinge,
        content_limit=max_content_chars(locked.config),
    )
    last_seq = locked.turns.aggregate(m=Max("seq"))["m"] or 0
    turn = Turn.objects.create(
        experiment=locked, seq=last_seq + 1, needs_review=needs_review, **cleaned
    )
    return turn
