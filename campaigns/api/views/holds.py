"""`/api/experiments/{id}/held/`: turns the output guard held, and the DM's decision on
each (publish, edit, discard). The DM side only: owner, staff, a user seated as the DM."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import PermissionDenied
from rest_framework.response import Response

from campaigns.access import can_review_held, get_experiment_for, get_held_turn_for
from campaigns.api.serializers.holds import (
    HeldEditSerializer,
    HeldPublishSerializer,
    HeldTurnSerializer,
)
from campaigns.api.serializers.turns import TurnSerializer
from campaigns.api.views.base import EXPERIMENT_ID, ApiView, validated
from campaigns.reads import selectors
from campaigns.services.holds import held_turn_discard, held_turn_edit, held_turn_publish

TURN_ID = OpenApiParameter("tid", OpenApiTypes.INT, OpenApiParameter.PATH)


def _shown(turn, viewer):
    holds = getattr(turn, "open_holds", None) or []
    quotes = holds[0].quotes if holds else []
    turn.shown_quotes = selectors.hold_quotes_shown_to(quotes=quotes, viewer=viewer)
    return turn


@extend_schema(parameters=[EXPERIMENT_ID])
class HeldListView(ApiView):
    serializer_class = HeldTurnSerializer

    @extend_schema(responses=HeldTurnSerializer(many=True))
    def get(self, request, id):
        """Held turns you review, in seq order, with the quoted sources you may read."""
        access = get_experiment_for(request.user, id)
        if not can_review_held(access):
            raise PermissionDenied("Only the DM side reviews held turns.")
        turns = selectors.held_turns_visible_to(experiment=access.experiment, viewer=access.viewer)
        page = self.paginate_queryset(turns.order_by("seq"))
        data = HeldTurnSerializer([_shown(t, access.viewer) for t in page], many=True).data
        return self.get_paginated_response(data)


def _held(request, id, tid, body=None):
    """The campaign, the body checked against ``body`` (after the permission, before the
    turn is looked up: a malformed body is a 400 whatever the turn), and the held turn."""
    access = get_experiment_for(request.user, id)
    if not can_review_held(access):
        raise PermissionDenied("Only the DM side reviews held turns.")
    data = validated(body, request.data) if body is not None else {}
    return access, data, get_held_turn_for(access, tid)


@extend_schema(parameters=[EXPERIMENT_ID, TURN_ID])
class HeldPublishView(ApiView):
    serializer_class = TurnSerializer

    @extend_schema(request=HeldPublishSerializer, responses={200: TurnSerializer})
    def post(self, request, id, tid):
        """Publish a held turn to the audience it was meant for (``content``: edit first)."""
        access, data, turn = _held(request, id, tid, HeldPublishSerializer)
        published = held_turn_publish(
            experiment=access.experiment, turn=turn, user=request.user, content=data.get("content")
        )
        return Response(TurnSerializer(published).data)


@extend_schema(parameters=[EXPERIMENT_ID, TURN_ID])
class HeldEditView(ApiView):
    serializer_class = HeldTurnSerializer

    @extend_schema(request=HeldEditSerializer, responses={200: HeldTurnSerializer})
    def post(self, request, id, tid):
        """Correct a held turn's text; it stays held until published."""
        access, data, turn = _held(request, id, tid, HeldEditSerializer)
        held_turn_edit(
            experiment=access.experiment, turn=turn, user=request.user, content=data["content"]
        )
        fresh = get_held_turn_for(access, turn.pk)
        return Response(HeldTurnSerializer(_shown(fresh, access.viewer)).data)


@extend_schema(parameters=[EXPERIMENT_ID, TURN_ID])
class HeldDiscardView(ApiView):
    serializer_class = HeldTurnSerializer  # what OPTIONS describes; the answer is a 204

    @extend_schema(request=None, responses={204: None})
    def post(self, request, id, tid):
        """Discard a held turn: it leaves the log (its text stays in the hold record)."""
        access, _data, turn = _held(request, id, tid)
        held_turn_discard(experiment=access.experiment, turn=turn, user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
