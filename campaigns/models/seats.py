"""Seats by invitation (issue 23 ask 7, issue 24 ask 2).

A person is seated at a participant when ``Participant.user`` names them; every read of
what a user may see (`selectors.experiments_for_user`, `viewer_for_user`, the dashboard,
packs) follows that link and nothing else. Adding another user to a campaign is an
`Invitation` instead: the link is made only when the invitee accepts, so until then
nothing of the campaign reaches them. Seats linked before invitations existed (the demo,
fixtures, ``seed_demo``) are seated already: they need no row here.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from campaigns.models.campaign import Experiment, Participant


class Invitation(models.Model):
    """An offer of one seat to one person, made by the campaign's owner (or staff).

    ``invitee`` is what the inviter typed (a username, or ``#<id>``); ``user`` is who it
    names, if anyone. The inviter is never told which: an invitation to nobody looks the
    same as one to a real user (pending) until the user answers.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        ACCEPTED = "accepted", "Accepted"
        DECLINED = "declined", "Declined"
        WITHDRAWN = "withdrawn", "Withdrawn"

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="invitations")
    participant = models.ForeignKey(
        Participant, on_delete=models.CASCADE, related_name="invitations"
    )
    invitee = models.CharField(max_length=150, help_text="As the inviter named them.")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="invitations",
        help_text="The user it names, if any (never shown to the inviter).",
    )
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    created_at = models.DateTimeField(auto_now_add=True)
    responded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["experiment_id", "-id"]
        constraints = [
            # One open offer per seat: a new invitation withdraws the previous one.
            models.UniqueConstraint(
                fields=["participant"],
                condition=Q(status="pending"),
                name="one_pending_invitation_per_seat",
            ),
        ]
        indexes = [
            # The dashboard and GET /api/invitations/: "pending invitations of user U".
            models.Index(
                fields=["user", "id"],
                condition=Q(status="pending"),
                name="invitation_pending_by_user",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.invitee} to {self.participant_id} ({self.status})"
