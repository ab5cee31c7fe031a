"""Turns the output leak guard held, and the DM's decision on each (issue 23 ask 6).

`turn_hold` stores a held answer: a `Turn` with ``held_at`` set, whose stored visibility is
the review audience (no wider than the DM roles that read every quoted source) so that a
reader that forgot the held rule would still fail closed, and an `OutputHold` with the
audience it was meant for and the guard's quotes. The selectors keep it from every reader
but its reviewers.

The DM then decides, once (each service locks the turn and its open hold):

- `held_turn_publish`: the turn takes the audience it was meant for. It is recorded as a
  `VisibilityChange` and re-derived like a reveal (`after_reveal`): the memory workers
  never read it while it was held, and this folds it into lore and digests now.
- `held_turn_edit`: the DM corrects the text; it stays held until published. The model's
  own words stay in `OutputHold.original` (not a `TurnRevision`, which other pages list).
- `held_turn_discard`: the turn leaves the log; its text stays in the hold for the owner.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from campaigns.models import Experiment, OutputHold, Turn, VisibilityChange
from campaigns.services import live_turns
from campaigns.services.memory.reveals import after_reveal
from campaigns.services.turns import turn_create
from campaigns.validation import clean_content, max_content_chars
from context_engine import tokens


@transaction.atomic
def turn_hold(*, experiment: Experiment, review: tuple[str, ...], quotes: list[dict], **fields):
    """Store an answer the guard caught: held, readable by ``review`` only, and its hold."""
    turn = turn_create(experiment=experiment, held=True, **fields)
    meant_for = turn.visibility
    turn.visibility = sorted(review)
    turn.save(update_fields=["visibility"])
    OutputHold.objects.create(
        experiment=experiment,
        turn=turn,
        round=turn.round,
        seq=turn.seq,
        speaker=turn.speaker,
        kind=turn.kind,
        visibility=meant_for,
        original=turn.content,
        quotes=quotes,
    )
    return turn


def _locked(experiment: Experiment, turn: Turn) -> tuple[Turn, OutputHold]:
    locked = (
        Turn.objects.select_for_update()
        .filter(pk=turn.pk, experiment=experiment, held_at__isnull=False)
        .first()
    )
    hold = (
        OutputHold.objects.select_for_update()
        .filter(turn_id=turn.pk, status=OutputHold.Status.HELD)
        .first()
    )
    if locked is None or hold is None:
        raise ValidationError({"turn": ["This turn is not held for review (any more)."]})
    return locked, hold


def _decide(hold: OutputHold, status: str, user) -> None:
    hold.status = status
    hold.decided_by = user if getattr(user, "pk", None) else None
    hold.decided_at = timezone.now()
    hold.save(update_fields=["status", "decided_by", "decided_at"])


def _set_content(experiment: Experiment, turn: Turn, content: object) -> None:
    text = clean_content(content, limit=max_content_chars(experiment.config))
    if text != turn.content:
        turn.content = text
        turn.tokens = tokens.count(text)
        turn.save(update_fields=["content", "tokens"])


@transaction.atomic
def held_turn_edit(*, experiment: Experiment, turn: Turn, user, content: object) -> Turn:
    """Correct a held turn's text; it stays held. A 400 on ``content`` if it is empty or
    over the experiment's limit; on ``turn`` if it is no longer held."""
    locked, _hold = _locked(experiment, turn)
    _set_content(experiment, locked, content)
    live_turns.announce(locked)  # its reviewers' held view
    return locked


@transaction.atomic
def held_turn_publish(*, experiment: Experiment, turn: Turn, user, content: object = None) -> Turn:
    """Publish a held turn to the audience it was meant for (``content``: edited first)."""
    locked, hold = _locked(experiment, turn)
    if content is not None:
        _set_content(experiment, locked, content)
    old = locked.visibility
    before = live_turns.channels_now(locked)  # its reviewers
    locked.visibility = hold.visibility
    locked.held_at = None
    locked.save(update_fields=["visibility", "held_at"])
    _decide(hold, OutputHold.Status.PUBLISHED, user)
    round_now = Experiment.objects.values_list("current_round", flat=True).get(pk=experiment.pk)
    change = VisibilityChange.objects.create(
        experiment=experiment,
        turn=locked,
        old_visibility=old,
        new_visibility=hold.visibility,
        round=round_now,
        user=user if getattr(user, "pk", None) else None,
    )
    after_reveal(change=change)
    live_turns.announce(locked, before=before)
    return locked


@transaction.atomic
def held_turn_discard(*, experiment: Experiment, turn: Turn, user) -> OutputHold:
    """Withdraw a held turn: it leaves the log; the hold keeps the model's text."""
    locked, hold = _locked(experiment, turn)
    _decide(hold, OutputHold.Status.DISCARDED, user)
    live_turns.announce(locked, before=live_turns.channels_now(locked), gone=True)
    locked.delete()
    hold.refresh_from_db()
    return hold
