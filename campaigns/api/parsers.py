"""JSON bodies that can be stored and sent back.

JSON may spell lone UTF-16 surrogates (``"\\ud800"``); Python parses them into strings
that no database and no UTF-8 response can encode, so such a value would be a 500 on
the way in or — worse, for free-form JSON like ``config`` — on every later read. They
are refused here, as a 400, before anything reaches a service.
"""

from __future__ import annotations

import json

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


class StrictJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        data = super().parse(stream, media_type, parser_context)
        try:
            json.dumps(data, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise ParseError("JSON parse error - text contains an unpaired surrogate.") from None
        return data
