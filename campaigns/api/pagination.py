"""Every list is paginated the same way: ``?page=N`` and ``?page_size=`` (≤ 500)."""

from __future__ import annotations

from rest_framework.pagination import PageNumberPagination


class BabelPagination(PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500
