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

ROOT = "non_field_errors"


def _problem(text: str) -> str | None:
    if "\x00" in text:
        return "Text may not contain NUL characters."
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "Text may not contain unpaired surrogates."
    return None


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def too_deep(value: object, limit: int) -> bool:
    """Whether containers nest deeper than ``limit`` (walked without recursion)."""
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth >= limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


def unstorable_text(value: object, path: str = "") -> tuple[str, str] | None:
    """``(path, message)`` of the first string (value or key) no database can store."""
    stack: list[tuple[object, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            problem = _problem(item)
            if problem:
                return where or ROOT, problem
        elif isinstance(item, dict):
            for key, child in item.items():
                problem = _problem(key)
                if problem:
                    return where or ROOT, f"A key: {problem}"
                stack.append((child, _child(where, key)))
        elif isinstance(item, list):
            stack.extend((child, f"{where}[{index}]") for index, child in enumerate(item))
    return None


def nesting_error() -> str:
    return f"JSON may nest at most {settings.BABEL_MAX_JSON_DEPTH} levels deep."


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
