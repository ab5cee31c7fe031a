"""Experiments and their participants."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound
from rest_framework.response import Response

from campaigns.access import get_experiment_for, parse_id, reading_viewer
from campaigns.api.examples import PARTICIPANT_EXAMPLES
from campaigns.api.serializers import (
    ConnectionSerializer,
    ConnectionTestSerializer,
    ExperimentCreateSerializer,
    ExperimentSerializer,
    ExperimentUpdateSerializer,
    ParticipantCreatedSerializer,
    ParticipantCreateSerializer,
    ParticipantSerializer,
    ParticipantUpdateSerializer,
)
from campaigns.api.views.base import AS_ROLE, EXPERIMENT_ID, ApiView, validated
from campaigns.reads import selectors
from campaigns.services.experiments import (
    experiment_create,
    experiment_delete,
    experiment_update,
    participant_update_model,
)
from campaigns.services.providers import (
    check_as_dict,
    check_connection_changes,
    clean_provider_fields,
    connection_after,
    memory_models_check_or_400,
    provider_check,
)
from campaigns.services.seats import participant_add


class ExperimentListView(ApiView):
    """`GET, POST /api/experiments/`: the experiments this user may see; create one."""

    serializer_class = ExperimentSerializer

    def get_queryset(self):
        return selectors.experiments_for_user(self.request.user).order_by("-created_at", "-id")

    @extend_schema(responses=ExperimentSerializer(many=True))
    def get(self, request):
        return self.paginated(self.get_queryset(), ExperimentSerializer)

    @extend_schema(request=ExperimentCreateSerializer, responses={201: ExperimentSerializer})
    def post(self, request):
        data = validated(ExperimentCreateSerializer, request.data)
        memory_models_check_or_400(data.get("config") or {})  # the memory workers' servers
        experiment = experiment_create(owner=request.user, **data)
        return Response(ExperimentSerializer(experiment).data, status=status.HTTP_201_CREATED)


@extend_schema(parameters=[EXPERIMENT_ID])
class ExperimentDetailView(ApiView):
    """`GET, PATCH, DELETE /api/experiments/{id}/`."""

    serializer_class = ExperimentSerializer

    @extend_schema(responses=ExperimentSerializer)
    def get(self, request, id):
        access = get_experiment_for(request.user, id)
        return Response(ExperimentSerializer(access.experiment).data)

    @extend_schema(request=ExperimentUpdateSerializer, responses=ExperimentSerializer)
    def patch(self, request, id):
        access = get_experiment_for(request.user, id, write=True)
        changes = validated(ExperimentUpdateSerializer, request.data)
        if "config" in changes:
            memory_models_check_or_400(
                changes["config"] or {}, before=access.experiment.config or {}
            )
        experiment = experiment_update(experiment=access.experiment, **changes)
        return Response(ExperimentSerializer(experiment).data)

    @extend_schema(responses={204: None})
    def delete(self, request, id):
        access = get_experiment_for(request.user, id, write=True)
        experiment_delete(experiment=access.experiment)
        return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema(parameters=[EXPERIMENT_ID])
class ParticipantListView(ApiView):
    """`GET, POST /api/experiments/{id}/participants/`.

    ``secret`` and ``identity`` are null for readers not entitled to them
    (`selectors.secret_readable`, `selectors.identity_readable`).
    """

    serializer_class = ParticipantSerializer

    @extend_schema(parameters=[AS_ROLE], responses=ParticipantSerializer(many=True))
    def get(self, request, id):
        access = get_experiment_for(request.user, id)
        viewer = reading_viewer(access, request.query_params.get("as"))
        round_now = selectors.current_round(experiment=access.experiment)
        page = self.paginate_queryset(access.experiment.participants.order_by("order", "id"))
        # Connection settings are shown to the editor reading as themself only.
        connection_shown = access.can_edit and not request.query_params.get("as")
        for participant in page:
            participant.connection_shown = connection_shown
            readable = selectors.secret_readable(
                participant=participant, viewer=viewer, round_now=round_now
            )
            participant.shown_secret = participant.secret if readable else None
            # When another's secret opens says that they hold one: hidden like the secret.
            participant.shown_reveal_round = participant.reveal_round if readable else None
            participant.shown_identity = (
                participant.identity
                if selectors.identity_readable(participant=participant, viewer=viewer)
                else None
            )
        return self.get_paginated_response(ParticipantSerializer(page, many=True).data)

    @extend_schema(
        request=ParticipantCreateSerializer,
        responses={201: ParticipantCreatedSerializer},
        examples=PARTICIPANT_EXAMPLES,
    )
    def post(self, request, id):
        """Add a participant. With ``user`` the seat is offered to that user: the answer
        carries a pending ``invitation`` (and ``user`` stays null) whether or not the id
        names anyone; the user is seated only when they accept it."""
        access = get_experiment_for(request.user, id, write=True)
        data = validated(ParticipantCreateSerializer, request.data)
        check_connection_changes(data)
        participant, invitation = participant_add(
            experiment=access.experiment, invited_by=request.user, **data
        )
        participant.shown_secret = participant.secret
        participant.shown_reveal_round = participant.reveal_round
        participant.shown_identity = participant.identity
        participant.shown_invitation = invitation
        return Response(
            ParticipantCreatedSerializer(participant).data, status=status.HTTP_201_CREATED
        )


@extend_schema(
    parameters=[EXPERIMENT_ID, OpenApiParameter("pid", OpenApiTypes.INT, OpenApiParameter.PATH)]
)
class ParticipantDetailView(ApiView):
    """`PATCH /api/experiments/{id}/participants/{pid}/`: the participant's model settings.

    ``model`` and its server (``base_url``, ``api_key``, ``timeout_s``,
    ``context_window``), ``temperature`` (0–2) and ``max_output_tokens`` (1–65536); null
    restores the default. A new model or server is asked first: unreachable, refusing
    the key or not serving the model is a 400 naming the field. Owner and staff only;
    the next round's steps use them. The key is never shown back.
    """

    serializer_class = ParticipantSerializer

    @extend_schema(request=ParticipantUpdateSerializer, responses=ParticipantSerializer)
    def patch(self, request, id, pid):
        access = get_experiment_for(request.user, id, write=True)
        participant = _participant(access, pid)
        changes = validated(ParticipantUpdateSerializer, request.data)
        check_connection_changes(changes, participant)
        participant = participant_update_model(participant=participant, **changes)
        participant.shown_secret = participant.secret
        participant.shown_reveal_round = participant.reveal_round
        participant.shown_identity = participant.identity
        return Response(ParticipantSerializer(participant).data)


def _participant(access, pid):
    participant = access.experiment.participants.filter(
        pk=parse_id(pid, what="Participant")
    ).first()
    if participant is None:
        raise NotFound("Participant not found.")
    return participant


@extend_schema(
    parameters=[EXPERIMENT_ID, OpenApiParameter("pid", OpenApiTypes.INT, OpenApiParameter.PATH)]
)
class ParticipantConnectionView(ApiView):
    """`POST /api/experiments/{id}/participants/{pid}/test-connection/`: "Test connection".

    Asks the participant's model server (or the settings in the body, unsaved) whether it
    is there, takes the key and serves the model, and what its context window is.
    Answers 200 with ``ok`` false and the ``field`` to fix when it is not; a setting that
    is malformed is a 400 naming it. Owner and staff only; the key is never shown.
    """

    serializer_class = ConnectionSerializer

    @extend_schema(request=ConnectionTestSerializer, responses=ConnectionSerializer)
    def post(self, request, id, pid):
        access = get_experiment_for(request.user, id, write=True)
        participant = _participant(access, pid)
        changes = validated(ConnectionTestSerializer, request.data or {})
        merged = connection_after(changes, participant)
        clean_provider_fields(**merged, allow_human=False)
        found = provider_check(**merged)
        if not hasattr(found, "ok"):
            raise found  # not even tried: unknown or not configured here, on its field
        return Response(check_as_dict(found))
