"""Memory: digests (`…/summaries/`), prompt packs (`…/context/{role}/`), and commands."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import PermissionDenied
from rest_framework.response import Response

from campaigns.access import (
    check_context_role,
    get_experiment_for,
    job_as_read_by,
    reading_viewer,
)
from campaigns.api.examples import COMMAND_EXAMPLES
from campaigns.api.serializers import (
    CommandSerializer,
    ContextSerializer,
    JobSerializer,
    RetrievalResultSerializer,
    SummarySerializer,
)
from campaigns.api.views.base import AS_ROLE, EXPERIMENT_ID, ApiView, validated
from campaigns.reads import numbering, selectors
from campaigns.reads.numbering import pack_shown_to
from campaigns.services.context import pack_for_role
from campaigns.services.memory import run_command
from campaigns.services.memory.retrieval import RETRIEVAL_COMMANDS, retrieval_run
from campaigns.services.windows import window_for_role
from context_engine.render import pack_to_dict


@extend_schema(parameters=[EXPERIMENT_ID])
class SummaryListView(ApiView):
    serializer_class = SummarySerializer

    @extend_schema(parameters=[AS_ROLE], responses=SummarySerializer(many=True))
    def get(self, request, id):
        """Digests and strategic summaries whose audience includes the reader."""
        access = get_experiment_for(request.user, id)
        viewer = reading_viewer(access, request.query_params.get("as"))
        summaries = selectors.summaries_visible_to(experiment=access.experiment, viewer=viewer)
        page = self.paginate_queryset(summaries.order_by("kind", "audience_key", "-version", "id"))
        page = numbering.shown_summaries(
            experiment=access.experiment, viewer=viewer, summaries=page
        )
        return self.get_paginated_response(SummarySerializer(page, many=True).data)


@extend_schema(
    parameters=[
        EXPERIMENT_ID,
        OpenApiParameter("role", OpenApiTypes.STR, OpenApiParameter.PATH),
    ]
)
class ContextView(ApiView):
    serializer_class = ContextSerializer

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "input",
                OpenApiTypes.STR,
                OpenApiParameter.QUERY,
                description="The current instruction / user input (section 8).",
            ),
            OpenApiParameter(
                "debug",
                OpenApiTypes.BOOL,
                OpenApiParameter.QUERY,
                description="Add the trim log, warnings and per-section items.",
            ),
        ],
        responses=ContextSerializer,
    )
    def get(self, request, id, role):
        """The prompt pack ``role`` would receive now. Players read only their own."""
        access = get_experiment_for(request.user, id)
        check_context_role(access, role)
        debug = request.query_params.get("debug", "false")
        if debug not in {"true", "false"}:
            raise ValidationError({"debug": ["Must be true or false."]})
        pack = pack_for_role(
            experiment=access.experiment,
            role=role,
            input_text=request.query_params.get("input", ""),
            window=window_for_role(experiment=access.experiment, role=role),
        )
        pack = pack_shown_to(experiment=access.experiment, viewer=access.viewer, pack=pack)
        return Response(pack_to_dict(pack, debug=debug == "true"))


@extend_schema(parameters=[EXPERIMENT_ID])
class CommandView(ApiView):
    serializer_class = CommandSerializer

    @extend_schema(
        request=CommandSerializer,
        responses={202: JobSerializer, 200: RetrievalResultSerializer},
        examples=COMMAND_EXAMPLES,
    )
    def post(self, request, id):
        """/checkpoint, /compress or /clear, as background work: answers the task to poll.
        /search, /lore and /timeline answer at once (200) with what the role may read."""
        access = get_experiment_for(request.user, id)
        data = validated(CommandSerializer, request.data)
        if data["command"] in RETRIEVAL_COMMANDS:
            return self._retrieve(request, access, data)
        if not access.can_edit:
            raise PermissionDenied("Only the experiment's owner (or staff) may do this.")
        if data.pop("query", None) is not None:
            raise ValidationError({"query": ["Only search, lore and timeline take a query."]})
        job = run_command(experiment=access.experiment, user=request.user, **data)
        return Response(
            JobSerializer(job_as_read_by(job, access)).data, status=status.HTTP_202_ACCEPTED
        )

    def _retrieve(self, request, access, data):
        role = data.get("role")
        if role:
            check_context_role(access, role)
            if not access.can_edit and role != access.viewer.role:
                # A lookup pins into that role's next pack: a write, so the DM side's (or
                # the role's own), never a judge's, who may only read other packs.
                raise PermissionDenied("You may pin lookups only into your own role's pack.")
            viewer = selectors.viewer_for_role(experiment=access.experiment, role=role)
        else:
            viewer = access.viewer  # a player: their own role; an editor: the whole log
        result = retrieval_run(
            experiment=access.experiment,
            viewer=viewer,
            command=data["command"],
            query=data.get("query") or "",
            user=request.user,
        )
        return Response(RetrievalResultSerializer(result).data, status=status.HTTP_200_OK)
