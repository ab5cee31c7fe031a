"""Background work: `POST …/rounds/` starts a round; `GET /api/tasks/{task_id}/` polls it;
`POST /api/tasks/{task_id}/skip/` moves a waiting round on without its away human."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import APIException, PermissionDenied
from rest_framework.response import Response

from campaigns.access import get_experiment_for, get_job_for, job_as_read_by
from campaigns.api.schema import ERROR_REF
from campaigns.api.serializers import EmptySerializer, JobSerializer
from campaigns.api.views.base import EXPERIMENT_ID, ApiView, validated
from campaigns.services import relay

TASK_ID = OpenApiParameter("task_id", OpenApiTypes.UUID, OpenApiParameter.PATH)


class Conflict(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "Conflict."
    default_code = "conflict"


@extend_schema(parameters=[EXPERIMENT_ID])
class RoundView(ApiView):
    serializer_class = EmptySerializer

    @extend_schema(
        request=EmptySerializer,
        responses={
            202: JobSerializer,
            409: OpenApiResponse(ERROR_REF, "A round is running or waiting for a human."),
        },
    )
    def post(self, request, id):
        """Run the next round (DM, then each player, then whisper answers) in the background."""
        access = get_experiment_for(request.user, id, write=True)
        validated(EmptySerializer, request.data)
        try:
            job = relay.round_start(experiment=access.experiment, user=request.user)
        except ValidationError as exc:
            if relay.ALREADY_RUNNING in exc.messages:
                raise Conflict({"round": [relay.ALREADY_RUNNING]}) from None
            waiting = [m for m in exc.messages if m.startswith(relay.WAITING_FOR)]
            if waiting:
                raise Conflict({"round": waiting}) from None
            raise
        return Response(
            JobSerializer(job_as_read_by(job, access)).data, status=status.HTTP_202_ACCEPTED
        )


@extend_schema(parameters=[TASK_ID])
class TaskView(ApiView):
    serializer_class = JobSerializer

    @extend_schema(responses=JobSerializer)
    def get(self, request, task_id):
        """A job's status and progress (0–100), authorised through its experiment.

        ``message`` and ``result`` are the owner's and staff's: they may name or count
        things a player's role does not read. Others get the status and progress only.
        """
        job, access = get_job_for(request.user, task_id)
        return Response(JobSerializer(job_as_read_by(job, access)).data)


@extend_schema(parameters=[TASK_ID])
class TaskSkipView(ApiView):
    serializer_class = EmptySerializer

    @extend_schema(
        request=EmptySerializer,
        responses={
            200: JobSerializer,
            409: OpenApiResponse(ERROR_REF, "The round is not waiting for anyone."),
        },
    )
    def post(self, request, task_id):
        """Skip the human a waiting round waits for (they are away): the campaign's
        ``human_timeout_policy`` applies at once, as on a timeout, and the round goes on.
        The owner's and staff's; a round that no longer waits is a 409 naming ``job``."""
        job, access = get_job_for(request.user, task_id)
        if not access.can_edit:
            raise PermissionDenied("Only the experiment's owner (or staff) may skip a human.")
        validated(EmptySerializer, request.data)
        try:
            relay.human_skip(experiment=access.experiment, job=job)
        except ValidationError as exc:
            raise Conflict(exc.message_dict) from None
        job.refresh_from_db()
        return Response(JobSerializer(job_as_read_by(job, access)).data)
