"""JSON bodies that can be stored and sent back.

JSON may spell text that no database holds: lone UTF-16 surrogates (``"\\ud800"``, which
no UTF-8 encoder accepts) and NUL characters (``"\\u0000"``, which PostgreSQL refuses in
text and jsonb). Parsed, they would be a 500 on the way in or — for free-form JSON such
as ``config`` — on every later read. They are refused here, before anything reaches a
service, as a 400 naming where they are (``content``, ``config.summarizer_model``,
``turns[3].tags[0]``; the importer's own error paths look the same).
"""

from __future__ import annotations

from django.conf import settings
from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.parsers import JSONParser

# The rules themselves are pure input checks, shared with the console's transcript upload.
from campaigns.validation import (
    ROOT,
    nesting_error,
    too_deep,
    unstorable_text,
)

__all__ = ["ROOT", "StrictJSONParser", "nesting_error", "too_deep", "unstorable_text"]


class StrictJSONParser(JSONParser):
    # Invalid UTF-8 is a ValueError inside DRF's parser, so already a 400 ParseError.

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:  # the decoder recurses once per level of nesting
            raise ParseError(nesting_error()) from None
        if too_deep(data, settings.BABEL_MAX_JSON_DEPTH):
            raise ParseError(nesting_error())
        found = unstorable_text(data)
        if found:
            where, problem = found
            raise ValidationError({where: [problem]})
        return data
