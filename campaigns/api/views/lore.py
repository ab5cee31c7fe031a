"""The World Bible: `GET, POST …/lore/`, `GET, PATCH …/lore/{lid}/`."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.response import Response

from campaigns.access import get_experiment_for, get_lore_for, reading_viewer
from campaigns.api.examples import LORE_EXAMPLES
from campaigns.api.serializers import LoreCreateSerializer, LoreSerializer, LoreUpdateSerializer
from campaigns.api.views.base import AS_ROLE, EXPERIMENT_ID, ApiView, validated
from campaigns.reads import numbering, selectors
from campaigns.services.lore import lore_create, lore_update

LORE_ID = OpenApiParameter("lid", OpenApiTypes.INT, OpenApiParameter.PATH, description="Entry id.")


@extend_schema(parameters=[EXPERIMENT_ID])
class LoreListView(ApiView):
    serializer_class = LoreSerializer

    @extend_schema(parameters=[AS_ROLE], responses=LoreSerializer(many=True))
    def get(self, request, id):
        """Entries the reader's role may see (its audience), by term."""
        access = get_experiment_for(request.user, id)
        viewer = reading_viewer(access, request.query_params.get("as"))
        entries = selectors.lore_visible_to(experiment=access.experiment, viewer=viewer)
        page = self.paginate_queryset(entries.order_by("term", "id"))
        page = numbering.shown_lore(experiment=access.experiment, viewer=viewer, entries=page)
        return self.get_paginated_response(LoreSerializer(page, many=True).data)

    @extend_schema(
        request=LoreCreateSerializer, responses={201: LoreSerializer}, examples=LORE_EXAMPLES
    )
    def post(self, request, id):
        """The DM adds an entry (confirmed, never overwritten by extraction)."""
        access = get_experiment_for(request.user, id, write=True)
        data = validated(LoreCreateSerializer, request.data)
        entry = lore_create(experiment=access.experiment, user=request.user, **data)
        entry.shown_id = entry.pk  # editors read everything: the real id
        return Response(LoreSerializer(entry).data, status=status.HTTP_201_CREATED)


@extend_schema(parameters=[EXPERIMENT_ID, LORE_ID])
class LoreDetailView(ApiView):
    serializer_class = LoreSerializer

    @extend_schema(parameters=[AS_ROLE], responses=LoreSerializer)
    def get(self, request, id, lid):
        access = get_experiment_for(request.user, id)
        viewer = reading_viewer(access, request.query_params.get("as"))
        (entry,) = numbering.shown_lore(
            experiment=access.experiment, viewer=viewer, entries=[get_lore_for(access, viewer, lid)]
        )
        return Response(LoreSerializer(entry).data)

    @extend_schema(request=LoreUpdateSerializer, responses=LoreSerializer)
    def patch(self, request, id, lid):
        """The DM corrects, confirms, rejects, locks or invalidates an entry (a revision)."""
        access = get_experiment_for(request.user, id, write=True)
        entry = get_lore_for(access, access.viewer, lid)
        changes = validated(LoreUpdateSerializer, request.data)
        entry = lore_update(entry=entry, user=request.user, **changes)
        entry.shown_id = entry.pk  # editors read everything: the real id
        return Response(LoreSerializer(entry).data)
