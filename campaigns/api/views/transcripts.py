"""`GET …/export/` and `POST /api/import/`: the transcript format, a lossless round trip."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import PermissionDenied
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from campaigns.access import get_experiment_for
from campaigns.api.examples import TRANSCRIPT_EXAMPLES
from campaigns.api.import_parser import TranscriptJSONParser
from campaigns.api.serializers import (
    TRANSCRIPT_IMPORT_SCHEMA,
    ExperimentSerializer,
    TranscriptSerializer,
)
from campaigns.api.views.base import EXPERIMENT_ID, ApiView
from campaigns.reads import session_log as logs
from campaigns.services import transcripts


@extend_schema(parameters=[EXPERIMENT_ID])
class ExportView(ApiView):
    serializer_class = TranscriptSerializer

    @extend_schema(responses=TranscriptSerializer)
    def get(self, request, id):
        """The whole experiment (secrets, whispers, GM notes): owner and staff only.

        The body is exactly `transcripts.dumps(...)`, the bytes `export_transcript` writes.
        """
        access = get_experiment_for(request.user, id, write=True)
        body, filename = transcripts.export_file(experiment=access.experiment)
        response = HttpResponse(body, content_type="application/json")
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response


class ImportView(ApiView):
    serializer_class = ExperimentSerializer
    parser_classes = [TranscriptJSONParser]

    @extend_schema(
        request={"application/json": TRANSCRIPT_IMPORT_SCHEMA},
        responses={
            201: ExperimentSerializer,
            413: OpenApiResponse(description="Over BABEL_MAX_IMPORT_BYTES (named in `detail`)."),
        },
        examples=TRANSCRIPT_EXAMPLES,
    )
    def post(self, request):
        """Create a new experiment, owned by the caller, from a transcript. All or nothing.

        Bodies up to `BABEL_MAX_IMPORT_BYTES` (default 256 MB) are accepted; a larger one
        is a 413 naming the limit, and nothing is stored.
        """
        experiment = transcripts.import_transcript(data=request.data, owner=request.user)
        body = ExperimentSerializer(experiment).data
        response = Response(body, status=status.HTTP_201_CREATED)
        response["Location"] = f"/api/experiments/{experiment.pk}/"
        return response


@extend_schema(parameters=[EXPERIMENT_ID])
class SessionLogView(ApiView):
    # ``?format=`` is this endpoint's own parameter (md or html), not DRF's renderer
    # override: the body is built here, and errors are JSON.
    renderer_classes = [JSONRenderer]

    def perform_content_negotiation(self, request, force=False):
        return super().perform_content_negotiation(request, force=True)

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "as",
                str,
                description="The role whose log to read (owner and staff: any role; "
                "omitted: everything published). A player reads only their own role's.",
            ),
            OpenApiParameter("format", str, enum=list(logs.FORMATS), description="md (default)"),
        ],
        responses={
            (200, "text/markdown"): OpenApiTypes.STR,
            (200, "text/html"): OpenApiTypes.STR,
            400: OpenApiResponse(description="Unknown role (`as`) or format (`format`)."),
            403: OpenApiResponse(description="A player asking for another role's log."),
        },
    )
    def get(self, request, id):
        """The session log as one audience may read it: the same bytes as the console's
        Markdown download and printable page."""
        access = get_experiment_for(request.user, id)
        as_role = request.query_params.get("as", "").strip()
        if logs.log_role_refused(viewer=access.viewer, as_role=as_role):
            raise PermissionDenied("You may read only your own role's log.")
        fmt = logs.clean_format(request.query_params.get("format"))
        experiment, reader = access.experiment, access.viewer
        log = logs.session_log_as(experiment=experiment, reader=reader, as_role=as_role)
        body, content_type, filename = logs.session_log_render(log, fmt)
        response = HttpResponse(body, content_type=content_type)
        disposition = "attachment" if fmt == "md" else "inline"
        response["Content-Disposition"] = f'{disposition}; filename="{filename}"'
        return response
