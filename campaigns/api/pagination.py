"""Every list is paginated the same way: ``?page=N`` and ``?page_size=`` (1–500).

Stricter than DRF's default, which silently ignores a junk ``page_size`` and accepts
``page=last``: a parameter the schema calls an integer is an integer, or the request is
refused (400 naming ``page`` or ``page_size``; a page that does not exist is 404).
"""

from __future__ import annotations

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination


class BabelPagination(PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500
    last_page_strings = ()

    def get_page_number(self, request, paginator):
        raw = request.query_params.get(self.page_query_param)
        if raw is None:
            return 1
        if not raw.isascii() or not raw.isdigit() or int(raw) < 1:
            raise ValidationError({self.page_query_param: ["A whole number from 1."]})
        return int(raw)

    def get_page_size(self, request):
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        if not raw.isascii() or not raw.isdigit() or not 1 <= int(raw) <= self.max_page_size:
            raise ValidationError(
                {self.page_size_query_param: [f"A whole number from 1 to {self.max_page_size}."]}
            )
        return int(raw)

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_query_param:
                parameter["schema"] = {"type": "integer", "minimum": 1}
            elif parameter["name"] == self.page_size_query_param:
                parameter["schema"] = {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": self.max_page_size,
                }
        return parameters
