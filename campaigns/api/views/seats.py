"""Invitations: the owner offers a seat; the invitee lists, accepts or declines.

- ``GET, POST /api/experiments/{id}/invitations/`` and
  ``DELETE /api/experiments/{id}/invitations/{iid}/`` (withdraw): owner and staff.
- ``GET /api/invitations/``, ``POST /api/invitations/{iid}/accept/`` and ``…/decline/``:
  the invitee's own open invitations; anyone else's (or an answered one) is a 404.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.response import Response

from campaigns.access import get_campaign_invitation, get_experiment_for, get_invitation_for
from campaigns.api.serializers import (
    EmptySerializer,
    InvitationAnswerSerializer,
    InvitationCreateSerializer,
    InvitationSerializer,
    ReceivedInvitationSerializer,
)
from campaigns.api.views.base import EXPERIMENT_ID, ApiView, validated
from campaigns.reads import selectors
from campaigns.services.seats import (
    invitation_accept,
    invitation_create,
    invitation_decline,
    invitation_withdraw,
)

INVITATION_ID = OpenApiParameter(
    "iid", OpenApiTypes.INT, OpenApiParameter.PATH, description="Invitation id."
)


@extend_schema(parameters=[EXPERIMENT_ID])
class CampaignInvitationListView(ApiView):
    serializer_class = InvitationSerializer

    @extend_schema(responses=InvitationSerializer(many=True))
    def get(self, request, id):
        """The campaign's invitations, newest first (owner and staff)."""
        access = get_experiment_for(request.user, id, write=True)
        return self.paginated(
            selectors.invitations_of(experiment=access.experiment), InvitationSerializer
        )

    @extend_schema(request=InvitationCreateSerializer, responses={201: InvitationSerializer})
    def post(self, request, id):
        """Offer the seat ``role`` to ``username`` (or ``user``, an id). The answer is the
        same whether or not that names a user: a pending invitation, which only a real
        invitee can answer. A pending offer of the same seat is withdrawn."""
        access = get_experiment_for(request.user, id, write=True)
        data = validated(InvitationCreateSerializer, request.data)
        invitation = invitation_create(
            experiment=access.experiment,
            role=data["role"],
            invited_by=request.user,
            username=data.get("username"),
            user_id=data.get("user"),
        )
        return Response(InvitationSerializer(invitation).data, status=status.HTTP_201_CREATED)


@extend_schema(parameters=[EXPERIMENT_ID, INVITATION_ID])
class CampaignInvitationDetailView(ApiView):
    serializer_class = InvitationSerializer

    @extend_schema(responses={204: None})
    def delete(self, request, id, iid):
        """Withdraw a pending invitation (owner and staff); an answered one is a 400."""
        access = get_experiment_for(request.user, id, write=True)
        invitation_withdraw(invitation=get_campaign_invitation(access, iid))
        return Response(status=status.HTTP_204_NO_CONTENT)


class InvitationListView(ApiView):
    serializer_class = ReceivedInvitationSerializer

    @extend_schema(responses=ReceivedInvitationSerializer(many=True))
    def get(self, request):
        """The caller's open invitations, newest first."""
        return self.paginated(
            selectors.invitations_for_user(request.user), ReceivedInvitationSerializer
        )


@extend_schema(parameters=[INVITATION_ID])
class InvitationAcceptView(ApiView):
    serializer_class = InvitationAnswerSerializer

    @extend_schema(request=EmptySerializer, responses=InvitationAnswerSerializer)
    def post(self, request, iid):
        """Take the seat: the campaign (``experiment``) is readable as that role from now."""
        invitation = get_invitation_for(request.user, iid)
        validated(EmptySerializer, request.data)
        invitation_accept(invitation=invitation, user=request.user)
        invitation.refresh_from_db()
        return Response(InvitationAnswerSerializer(invitation).data)


@extend_schema(parameters=[INVITATION_ID])
class InvitationDeclineView(ApiView):
    serializer_class = InvitationAnswerSerializer

    @extend_schema(request=EmptySerializer, responses=InvitationAnswerSerializer)
    def post(self, request, iid):
        """Turn the seat down: nothing of the campaign reaches the caller."""
        invitation = get_invitation_for(request.user, iid)
        validated(EmptySerializer, request.data)
        invitation = invitation_decline(invitation=invitation, user=request.user)
        return Response(InvitationAnswerSerializer(invitation).data)
