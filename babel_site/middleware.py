"""Request bodies over the limit are refused before anything reads them.

Django raises ``RequestDataTooBig`` only when a view touches ``request.body`` and answers
it with an HTML 400; the API reads its stream another way and would not check at all.
Here every request whose declared length is over the limit gets a 413 that names the
limit — JSON under ``/api/``, a plain page elsewhere — before a byte of it is read.

Static files are WhiteNoise's, adapted to ASGI (``StaticFilesMiddleware``).
"""

from __future__ import annotations

import asyncio

from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from whitenoise.middleware import WhiteNoiseMiddleware

from babel_site.errors import error_response

IMPORT_PATH = "/api/import/"
CONSOLE_IMPORT_PATH = "/campaigns/import/"
# A form upload wraps the file in multipart headers and the CSRF field: room for them, so
# a file just over the limit gets the form's own message naming it rather than a bare 413.
MULTIPART_ROOM = 64 * 1024


def body_limit(path: str) -> tuple[int, str]:
    """The byte limit for a path and the setting that sets it."""
    if path == IMPORT_PATH:
        return settings.BABEL_MAX_IMPORT_BYTES, "BABEL_MAX_IMPORT_BYTES"
    if path == CONSOLE_IMPORT_PATH:
        return settings.BABEL_MAX_IMPORT_BYTES + MULTIPART_ROOM, "BABEL_MAX_IMPORT_BYTES"
    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE, "BABEL_MAX_BODY_BYTES"


class RequestBodyLimitMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0  # Django reads a malformed length as no body at all
        limit, name = body_limit(request.path)
        if length > limit:
            return error_response(
                request,
                413,
                f"The request body is {length} bytes; the limit is {limit} bytes ({name}).",
            )
        return self.get_response(request)


class StaticFilesMiddleware(WhiteNoiseMiddleware):
    """WhiteNoise (compressed files, cache headers, ranges), with the file's body an async
    iterator when the request came through ASGI.

    WhiteNoise's middleware is synchronous and answers with a ``FileResponse``, whose body
    Django's ASGI handler can only read with a thread hop per block and a warning per file;
    here the blocks are read off the event loop (``asyncio.to_thread``) and sent as they come.
    Under WSGI (the test live server) the response is WhiteNoise's own, unchanged."""

    @staticmethod
    def serve(static_file, request):
        response = WhiteNoiseMiddleware.serve(static_file, request)
        if isinstance(request, ASGIRequest):
            response.streaming_content = _read_in_thread(response.file_to_stream)
        return response


async def _read_in_thread(file, block_size: int = 64 * 1024):
    if file is None:  # HEAD, 304: headers only
        return
    try:
        while chunk := await asyncio.to_thread(file.read, block_size):
            yield chunk
    finally:
        await asyncio.to_thread(file.close)
