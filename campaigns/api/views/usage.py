"""`GET /api/experiments/{id}/usage/`: tokens in, cached and out per agent and per round."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response

from campaigns.access import get_experiment_for
from campaigns.api.serializers.base import MAX_ROUND
from campaigns.api.serializers.usage import UsageFilterSerializer, UsageSerializer
from campaigns.api.views.base import EXPERIMENT_ID, ApiView, validated
from campaigns.reads.usage import usage_rounds, usage_summary


@extend_schema(parameters=[EXPERIMENT_ID])
class UsageView(ApiView):
    serializer_class = UsageSerializer

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "round",
                {"type": "integer", "minimum": 0, "maximum": MAX_ROUND},
                OpenApiParameter.QUERY,
                description="Only this round's calls (the per-round list stays whole).",
            )
        ],
        responses=UsageSerializer,
    )
    def get(self, request, id):
        """Model usage with the saving in cached tokens. Owner and staff only (403 for
        players: the counts come from every agent's prompt)."""
        access = get_experiment_for(request.user, id, write=True)
        filters = validated(
            UsageFilterSerializer,
            {k: request.query_params[k] for k in ("round",) if k in request.query_params},
        )
        data = usage_summary(experiment=access.experiment, round=filters.get("round"))
        data["rounds"] = usage_rounds(experiment=access.experiment)
        return Response(UsageSerializer(data).data)
