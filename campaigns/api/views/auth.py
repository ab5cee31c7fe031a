"""`POST /api/auth/token/`: a token for ``Authorization: Token …``."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.authtoken.views import ObtainAuthToken


class ObtainTokenView(ObtainAuthToken):
    """`POST /api/auth/token/` with {username, password} → {"token": …}."""

    @extend_schema(
        request=inline_serializer(
            "Token",
            {"username": serializers.CharField(), "password": serializers.CharField()},
        ),
        responses=inline_serializer("TokenResponse", {"token": serializers.CharField()}),
        auth=[],
    )
    def post(self, request, *args, **kwargs):
        return super().post(request, *args, **kwargs)
