"""`GET, POST /api/experiments/{id}/turns/`: the log as one role reads it; post a turn."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound
from rest_framework.response import Response

from campaigns.access import (
    check_turn_post,
    get_experiment_for,
    get_turn_for,
    get_turn_to_fix,
    job_as_read_by,
    parse_id,
    reading_viewer,
)
from campaigns.api.examples import TURN_EXAMPLES
from campaigns.api.serializers import (
    EmptySerializer,
    JobSerializer,
    RevealSerializer,
    TurnCreateSerializer,
    TurnDetailSerializer,
    TurnEditSerializer,
    TurnFilterSerializer,
    TurnSerializer,
    VisibilityChangeSerializer,
)
from campaigns.api.serializers.base import MAX_ROUND
from campaigns.api.views.base import AS_ROLE, EXPERIMENT_ID, ApiView, validated
from campaigns.models import Turn
from campaigns.reads import numbering, selectors
from campaigns.services.relay import human_turn_create
from campaigns.services.reveals import turn_reveal
from campaigns.services.turn_fixes import step_regenerate_start, turn_edit

TURN_ID = OpenApiParameter(
    "tid",
    OpenApiTypes.INT,
    OpenApiParameter.PATH,
    description="The turn's id as you were shown it (`id` in the turn list).",
)


@extend_schema(parameters=[EXPERIMENT_ID])
class TurnListView(ApiView):
    serializer_class = TurnSerializer

    @extend_schema(
        parameters=[
            AS_ROLE,
            OpenApiParameter(
                "round",
                {"type": "integer", "minimum": 0, "maximum": MAX_ROUND},
                OpenApiParameter.QUERY,
                description="Only this round.",
            ),
            OpenApiParameter(
                "kind",
                OpenApiTypes.STR,
                OpenApiParameter.QUERY,
                enum=Turn.Kind.values,
                description="Only turns of this kind.",
            ),
        ],
        responses=TurnSerializer(many=True),
    )
    def get(self, request, id):
        """The turns the reader may see, in seq order, filtered by ``?round=`` / ``?kind=``."""
        access = get_experiment_for(request.user, id)
        viewer = reading_viewer(access, request.query_params.get("as"))
        filters = validated(
            TurnFilterSerializer,
            {
                key: request.query_params[key]
                for key in ("round", "kind")
                if key in request.query_params
            },
        )
        turns = selectors.turns_visible_to(experiment=access.experiment, viewer=viewer)
        page = self.paginate_queryset(turns.filter(**filters).order_by("seq"))
        page = numbering.shown_turns(experiment=access.experiment, viewer=viewer, turns=page)
        return self.get_paginated_response(TurnSerializer(page, many=True).data)

    @extend_schema(
        request=TurnCreateSerializer, responses={201: TurnSerializer}, examples=TURN_EXAMPLES
    )
    def post(self, request, id):
        """Post a turn. A linked player posts only as their role, only what they may read,
        only into the open round, and never hinges or tags (the DM side's levers)."""
        access = get_experiment_for(request.user, id)
        data = validated(TurnCreateSerializer, request.data)
        check_turn_post(access, data)
        turn = human_turn_create(
            experiment=access.experiment,
            user=request.user,
            **data,
        )
        (turn,) = numbering.shown_turns(
            experiment=access.experiment, viewer=access.viewer, turns=[turn]
        )
        return Response(TurnSerializer(turn).data, status=status.HTTP_201_CREATED)


@extend_schema(
    parameters=[EXPERIMENT_ID, OpenApiParameter("tid", OpenApiTypes.INT, OpenApiParameter.PATH)]
)
class TurnRevealView(ApiView):
    serializer_class = VisibilityChangeSerializer

    @extend_schema(request=RevealSerializer, responses={201: VisibilityChangeSerializer})
    def post(self, request, id, tid):
        """Reveal: widen one turn's audience (owner and staff). Recorded as a visibility
        change; lore and digests are re-derived for the new audience in the background."""
        access = get_experiment_for(request.user, id, write=True)
        turn = Turn.objects.filter(
            experiment=access.experiment, pk=parse_id(tid, what="Turn")
        ).first()
        if turn is None:
            raise NotFound("Turn not found.")
        data = validated(RevealSerializer, request.data)
        change = turn_reveal(
            experiment=access.experiment,
            turn=turn,
            visibility=data["visibility"],
            user=request.user,
        )
        return Response(VisibilityChangeSerializer(change).data, status=status.HTTP_201_CREATED)


def _detailed(access, viewer, turn):
    """``turn`` as ``viewer`` is shown it, with the earlier texts they read."""
    turn.revision_list = list(
        selectors.turn_revisions_visible_to(
            experiment=access.experiment, viewer=viewer, turn_ids=[turn.pk]
        )
    )
    (turn,) = numbering.shown_turns(experiment=access.experiment, viewer=viewer, turns=[turn])
    return turn


@extend_schema(parameters=[EXPERIMENT_ID, TURN_ID])
class TurnDetailView(ApiView):
    serializer_class = TurnDetailSerializer

    @extend_schema(parameters=[AS_ROLE], responses=TurnDetailSerializer)
    def get(self, request, id, tid):
        """One turn you read (by the id you were shown), with its earlier texts you read."""
        access = get_experiment_for(request.user, id)
        viewer = reading_viewer(access, request.query_params.get("as"))
        turn = get_turn_for(access, viewer, tid)
        return Response(TurnDetailSerializer(_detailed(access, viewer, turn)).data)

    @extend_schema(request=TurnEditSerializer, responses={200: TurnDetailSerializer})
    def patch(self, request, id, tid):
        """Edit a turn's text (the DM side: owner, staff, a user seated as the DM). The old
        text is kept as a revision, read only by who read it; digests that folded the turn
        are folded again and World Bible entries sourced from it follow the new text. A
        turn you do not read is a 404; one you read but may not edit, a 403."""
        access = get_experiment_for(request.user, id)
        turn = get_turn_to_fix(access, tid)
        data = validated(TurnEditSerializer, request.data)
        turn = turn_edit(turn=turn, user=request.user, content=data["content"])
        return Response(TurnDetailSerializer(_detailed(access, access.viewer, turn)).data)


@extend_schema(parameters=[EXPERIMENT_ID, TURN_ID])
class TurnRegenerateView(ApiView):
    serializer_class = EmptySerializer

    @extend_schema(request=EmptySerializer, responses={202: JobSerializer})
    def post(self, request, id, tid):
        """Ask the model that wrote this turn for its round step again, with the pack it
        reads now (the DM side). Runs in the background: poll the task. The step's turns
        take the new text (old texts kept as revisions); if the model fails, they keep
        the old text and the task says why. A turn no model wrote is a 400 on ``turn``."""
        access = get_experiment_for(request.user, id)
        turn = get_turn_to_fix(access, tid)
        validated(EmptySerializer, request.data)
        job = step_regenerate_start(turn=turn, user=request.user)
        return Response(
            JobSerializer(job_as_read_by(job, access)).data, status=status.HTTP_202_ACCEPTED
        )
