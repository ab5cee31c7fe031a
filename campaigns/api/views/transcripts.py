"""`GET …/export/` and `POST /api/import/`: the transcript format, a lossless round trip."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
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
        text = transcripts.dumps(transcripts.export_transcript(experiment=access.experiment))
        response = HttpResponse(text.encode("utf-8"), content_type="application/json")
        response["Content-Disposition"] = (
            f'attachment; filename="experiment-{access.experiment.pk}.json"'
        )
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
