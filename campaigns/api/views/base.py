"""Shared pieces of the API views: OpenAPI parameters and input parsing."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework.exceptions import ValidationError
from rest_framework.generics import GenericAPIView

from campaigns.api.parsers import unstorable_text

EXPERIMENT_ID = OpenApiParameter(
    "id", OpenApiTypes.INT, OpenApiParameter.PATH, description="Experiment id."
)
AS_ROLE = OpenApiParameter(
    "as",
    OpenApiTypes.STR,
    OpenApiParameter.QUERY,
    description=(
        "Read as this role (owner and staff; judges may narrow). A user linked to a "
        "participant always reads their own role's view, whatever this says."
    ),
)


def validated(serializer_class, data, **kwargs) -> dict:
    """Shape-check a body with an input serializer; 400 naming the fields otherwise."""
    serializer = serializer_class(data=data, **kwargs)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


class ApiView(GenericAPIView):
    """Base of the API views: no model magic, every method says what it does."""

    def initial(self, request, *args, **kwargs):
        """Query parameters get the same check as JSON bodies: text that no database can
        store (NUL, lone surrogates) is a 400 naming the parameter, never a 500 later.
        Every parameter of this API takes one value: one given twice is a 400 too (a
        reader would otherwise get whichever copy came last, silently)."""
        super().initial(request, *args, **kwargs)
        for name, values in request.query_params.lists():
            if len(values) > 1:
                raise ValidationError({name: ["Give this parameter once."]})
            found = unstorable_text({name: values})
            if found:
                where, problem = found
                raise ValidationError({where.split("[", 1)[0]: [problem]})

    def paginated(self, queryset, serializer_class):
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response(serializer_class(page, many=True).data)
