"""One error shape for the whole API: ``{field: [messages]}`` (or ``{"detail": …}``).

Services raise django's ValidationError keyed by field name (`campaigns.services`); DRF
does not know it and would answer 500. This handler turns it into a 400 with the same
keys, so a bad request names its field whichever layer caught it.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import exceptions
from rest_framework.views import exception_handler as drf_exception_handler

NON_FIELD = "non_field_errors"


def django_error_detail(error: DjangoValidationError) -> dict[str, list[str]]:
    if hasattr(error, "error_dict"):
        return {field: list(messages) for field, messages in error.message_dict.items()}
    return {NON_FIELD: list(error.messages)}


def exception_handler(exc, context):
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(detail=django_error_detail(exc))
    return drf_exception_handler(exc, context)
