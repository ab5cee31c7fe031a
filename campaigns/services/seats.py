"""Seats by invitation: the owner offers a seat, the invitee accepts or declines.

Until the invitee accepts, ``Participant.user`` stays empty, so nothing of the campaign
reaches them (every read follows that link). The inviter gets the same answer whoever
they named — a user, or no one (an unknown username or id): an invitation is stored
either way and stays pending until a real invitee answers, so the answer is no oracle
for which usernames or ids exist.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from campaigns.models import Experiment, Invitation, Participant
from campaigns.services.experiments import participant_create

MAX_ID = 2**63 - 1


def _invitee(*, username: object = None, user_id: object = None) -> tuple[str, object]:
    """(what the inviter named, the active user it names or None). Exactly one of
    ``username`` / ``user_id``; a malformed one is a 400 naming it."""
    if (username is None) == (user_id is None):
        raise ValidationError({"username": ["Name the invitee: a username (or a user id)."]})
    User = get_user_model()
    if username is not None:
        if not isinstance(username, str) or not username.strip() or len(username) > 150:
            raise ValidationError({"username": ["A username of 1–150 characters."]})
        username = username.strip()
        found = User.objects.filter(username=username, is_active=True).first()
        return username, found
    if isinstance(user_id, bool) or not isinstance(user_id, int) or not 1 <= user_id <= MAX_ID:
        raise ValidationError({"user": ["A user id: a positive whole number."]})
    return f"#{user_id}", User.objects.filter(pk=user_id, is_active=True).first()


def _locked_seat(experiment: Experiment, role: object) -> Participant:
    if not isinstance(role, str) or not role:
        raise ValidationError({"role": ["Name the seat: one of the campaign's roles."]})
    seat = Participant.objects.select_for_update().filter(experiment=experiment, role=role).first()
    if seat is None:
        raise ValidationError({"role": [f"No participant with role {role!r} in this campaign."]})
    if seat.user_id is not None:
        raise ValidationError({"role": [f"Someone already plays {role!r}."]})
    return seat


@transaction.atomic
def invitation_create(
    *,
    experiment: Experiment,
    role: object,
    invited_by,
    username: object = None,
    user_id: object = None,
) -> Invitation:
    """Offer the seat ``role`` to a username (or user id). A pending offer of the same
    seat is withdrawn first (one open offer per seat)."""
    invitee, user = _invitee(username=username, user_id=user_id)
    seat = _locked_seat(experiment, role)
    now = timezone.now()
    Invitation.objects.filter(participant=seat, status=Invitation.Status.PENDING).update(
        status=Invitation.Status.WITHDRAWN, responded_at=now
    )
    return Invitation.objects.create(
        experiment=experiment,
        participant=seat,
        invitee=invitee,
        user=user,
        invited_by=invited_by if getattr(invited_by, "pk", None) else None,
    )


@transaction.atomic
def participant_add(*, experiment: Experiment, invited_by, user=None, **fields):
    """A new participant, as the API's ``POST …/participants/`` makes it: with ``user``
    (an id) the seat is offered to that user (`invitation_create`), never linked on the
    spot. Returns (participant, invitation or None)."""
    if user is not None:
        _invitee(user_id=user)  # a malformed id is a 400 before anything is stored
    participant = participant_create(experiment=experiment, **fields)
    if user is None:
        return participant, None
    invitation = invitation_create(
        experiment=experiment, role=participant.role, invited_by=invited_by, user_id=user
    )
    return participant, invitation


def _locked_pending(invitation: Invitation, user) -> Invitation:
    locked = (
        Invitation.objects.select_for_update()
        .filter(pk=invitation.pk, user_id=user.pk, status=Invitation.Status.PENDING)
        .first()
    )
    if locked is None:
        raise ValidationError({"invitation": ["This invitation is no longer open."]})
    return locked


@transaction.atomic
def invitation_accept(*, invitation: Invitation, user) -> Participant:
    """The invitee takes the seat: from now on the campaign is theirs to read as that
    role. One seat per person per campaign; a seat taken meanwhile cannot be accepted."""
    locked = _locked_pending(invitation, user)
    seat = Participant.objects.select_for_update().get(pk=locked.participant_id)
    if seat.user_id is not None:
        raise ValidationError({"invitation": ["Someone else took this seat meanwhile."]})
    other = (
        Participant.objects.filter(experiment_id=locked.experiment_id, user_id=user.pk)
        .values_list("role", flat=True)
        .first()
    )
    if other is not None:
        raise ValidationError({"invitation": [f"You already play {other!r} in this campaign."]})
    seat.user = user
    seat.save(update_fields=["user"])
    locked.status = Invitation.Status.ACCEPTED
    locked.responded_at = timezone.now()
    locked.save(update_fields=["status", "responded_at"])
    return seat


@transaction.atomic
def invitation_decline(*, invitation: Invitation, user) -> Invitation:
    locked = _locked_pending(invitation, user)
    locked.status = Invitation.Status.DECLINED
    locked.responded_at = timezone.now()
    locked.save(update_fields=["status", "responded_at"])
    return locked


@transaction.atomic
def invitation_withdraw(*, invitation: Invitation) -> Invitation:
    """The inviter takes a pending offer back (an answered one stays as it is)."""
    locked = Invitation.objects.select_for_update().get(pk=invitation.pk)
    if locked.status != Invitation.Status.PENDING:
        raise ValidationError({"invitation": [f"This invitation is {locked.status} already."]})
    locked.status = Invitation.Status.WITHDRAWN
    locked.responded_at = timezone.now()
    locked.save(update_fields=["status", "responded_at"])
    return locked
