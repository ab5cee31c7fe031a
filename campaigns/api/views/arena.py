"""Planted facts (`GET …/facts/`) and the Arena (`GET, POST …/arena/`)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response

from campaigns.access import get_experiment_for, job_as_read_by, reading_viewer
from campaigns.api.serializers import JobSerializer
from campaigns.api.serializers.arena import (
    ArenaRunSerializer,
    ArenaStartSerializer,
    FactSerializer,
)
from campaigns.api.views.base import AS_ROLE, EXPERIMENT_ID, ApiView, validated
from campaigns.models import ArenaRun
from campaigns.reads import selectors
from campaigns.services.arena import arena_start


@extend_schema(parameters=[EXPERIMENT_ID])
class FactListView(ApiView):
    serializer_class = FactSerializer

    @extend_schema(parameters=[AS_ROLE], responses=FactSerializer(many=True))
    def get(self, request, id):
        """Planted facts whose audience includes the reader, in transcript order."""
        access = get_experiment_for(request.user, id)
        viewer = reading_viewer(access, request.query_params.get("as"))
        facts = selectors.facts_visible_to(experiment=access.experiment, viewer=viewer)
        return self.paginated(facts.order_by("position", "id"), FactSerializer)


@extend_schema(parameters=[EXPERIMENT_ID])
class ArenaView(ApiView):
    serializer_class = ArenaRunSerializer

    @extend_schema(responses=ArenaRunSerializer(many=True))
    def get(self, request, id):
        """Stored Arena reports, newest first: owner and staff only (a report summarises
        facts across every audience, so players get 403, outsiders 404)."""
        access = get_experiment_for(request.user, id, write=True)
        runs = ArenaRun.objects.filter(experiment=access.experiment)
        return self.paginated(runs.order_by("-created_at", "-id"), ArenaRunSerializer)

    @extend_schema(request=ArenaStartSerializer, responses={202: JobSerializer})
    def post(self, request, id):
        """Start an Arena run in the background; answers the task to poll."""
        access = get_experiment_for(request.user, id, write=True)
        data = validated(ArenaStartSerializer, request.data)
        job = arena_start(experiment=access.experiment, user=request.user, **data)
        return Response(
            JobSerializer(job_as_read_by(job, access)).data, status=status.HTTP_202_ACCEPTED
        )
