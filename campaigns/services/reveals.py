"""Reveals (SPEC §4, issue 10 ask 7): where an audience widens, and what follows.

An audience widens in exactly two ways, and both end in the same background task
(`rederive_reveal`, via `after_reveal`, sent after commit with the change's id):

- `turn_reveal`: the owner (or staff) widens one turn's visibility — the API's
  ``POST …/turns/{tid}/reveal/`` and the console's "Reveal" action on the timeline. Only
  widening: every role that read the turn still reads it; a narrower or equal audience is
  a 400 on ``visibility`` and nothing is stored.
- `secrets_reveal_due`: the campaign clock (`Experiment.current_round`) passing a secret
  goal's ``reveal_round`` (the turn service and a round start call it). It records one
  `VisibilityChange` per participant, ever (a unique constraint), so a clock that moves
  twice, or two workers racing, dispatch it once.

The task re-derives lore and digests for the new audience (`memory.reveals`); for a
secret it has nothing to fold (no derived artifact holds a secret: packs read it through
`secret_readable` by round), so the record is the audit trail and the hook stays one.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from campaigns.models import Experiment, Participant, Turn, VisibilityChange
from campaigns.reads.selectors import dm_roles
from campaigns.services import live_turns
from campaigns.services.memory.reveals import after_reveal
from campaigns.validation import clean_visibility
from context_engine.visibility import parse_stored_visibility


def _audience(value) -> frozenset[str] | None:
    return None if value is None else frozenset(value)


@transaction.atomic
def turn_reveal(*, experiment: Experiment, turn: Turn, visibility, user=None) -> VisibilityChange:
    """Widen ``turn``'s audience to ``visibility`` (None: everyone) and re-derive after commit."""
    roles = list(experiment.participants.values_list("role", flat=True))
    new = clean_visibility(visibility, roles)
    locked = Turn.objects.select_for_update().get(pk=turn.pk, experiment=experiment)
    if locked.held_at is not None:
        raise ValidationError(
            {"turn": ["This turn is held for review: publish or discard it there."]}
        )
    # Stored visibility read as the selector reads it (corrupt data fails closed: DM-only).
    old = parse_stored_visibility(locked.visibility, dm_roles(experiment=experiment))
    if old is None:
        raise ValidationError({"visibility": ["This turn is already public."]})
    if new is not None:
        lost = sorted(set(old) - set(new))
        if lost:
            raise ValidationError(
                {"visibility": [f"A reveal only widens: {', '.join(lost)} would lose this turn."]}
            )
        if set(new) == set(old):
            raise ValidationError(
                {"visibility": ["Name at least one role that cannot read this turn yet."]}
            )
    round_now = Experiment.objects.values_list("current_round", flat=True).get(pk=experiment.pk)
    change = VisibilityChange.objects.create(
        experiment=experiment,
        turn=locked,
        old_visibility=locked.visibility,
        new_visibility=new,
        round=round_now,
        user=user if getattr(user, "pk", None) else None,
    )
    before = live_turns.channels_now(locked)
    locked.visibility = new
    locked.save(update_fields=["visibility"])
    after_reveal(change=change)
    live_turns.announce(locked, before=before)
    return change


def secrets_reveal_due(*, experiment_id: int, round_now: int) -> list[int]:
    """Record (once) and dispatch the reveal of every secret whose reveal round has passed.

    Call after the clock moved to ``round_now``; cheap when nothing is due (one query).
    Returns the new changes' ids.
    """
    due = Participant.objects.filter(
        experiment_id=experiment_id, reveal_round__lt=round_now
    ).exclude(secret="")
    due = due.exclude(
        pk__in=VisibilityChange.objects.filter(participant__isnull=False).values("participant_id")
    )
    created: list[int] = []
    for participant in due:
        try:
            with transaction.atomic():
                change = VisibilityChange.objects.create(
                    experiment_id=experiment_id,
                    participant=participant,
                    old_visibility=[participant.role],
                    new_visibility=None,
                    round=round_now,
                )
                after_reveal(change=change)
        except IntegrityError:
            continue  # another writer recorded it first
        created.append(change.pk)
    return created
