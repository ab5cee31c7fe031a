"""The transcript body of `POST /api/import/`: up to `BABEL_MAX_IMPORT_BYTES`, read once.

Django refuses bodies over DATA_UPLOAD_MAX_MEMORY_SIZE (2.5 MB) when something reads
``request.body`` — which DRF does for its JSON parsers. This parser reads
``request.stream`` itself, so it is the one place that decides an import's size. A
declared Content-Length over the limit is a 413 before a byte is read; a body without
one (chunked) is read up to the limit and refused the moment it passes it. The bytes
are read into one buffer and handed to the strict JSON parser (NUL / lone surrogates
refused, see `parsers`).
"""

from __future__ import annotations

import io

from django.conf import settings
from rest_framework import status
from rest_framework.exceptions import APIException
from rest_framework.parsers import BaseParser

from campaigns.api.parsers import StrictJSONParser
from campaigns.services.transcripts.common import gc_paused

CHUNK = 1024 * 1024


class ImportTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "too_large"


def _too_large(size: str) -> ImportTooLarge:
    limit = settings.BABEL_MAX_IMPORT_BYTES
    return ImportTooLarge(
        f"The transcript is {size}; the limit is {limit} bytes ({limit / 2**20:g} MB, "
        "BABEL_MAX_IMPORT_BYTES)."
    )


def read_limited(stream, declared: int | None, limit: int) -> bytes:
    """The whole body, or ImportTooLarge as soon as it is known to pass ``limit``."""
    if declared is not None:
        if declared > limit:
            raise _too_large(f"{declared} bytes")
        return stream.read(declared) if declared else b""
    buffer = bytearray()
    while chunk := stream.read(CHUNK):
        buffer += chunk
        if len(buffer) > limit:
            raise _too_large(f"over {limit} bytes")
    return bytes(buffer)


class TranscriptJSONParser(BaseParser):
    """Not a JSONParser subclass on purpose: DRF reads ``request.body`` (and so applies
    DATA_UPLOAD_MAX_MEMORY_SIZE, keeping a second copy) for those before parsing."""

    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None):
        request = (parser_context or {}).get("request")
        meta = getattr(request, "META", {}) if request is not None else {}
        try:
            declared = int(meta.get("CONTENT_LENGTH") or "")
        except ValueError:
            declared = None
        body = read_limited(stream, declared, settings.BABEL_MAX_IMPORT_BYTES)
        with gc_paused():
            return StrictJSONParser().parse(io.BytesIO(body), media_type, parser_context)
