"""`POST /api/auth/token/`: a token for ``Authorization: Token …``."""

from __future__ import annotations

from django.contrib.auth.signals import user_logged_in
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.authtoken.models import Token
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.parsers import FormParser
from rest_framework.response import Response

from campaigns.api.parsers import StrictJSONParser
from campaigns.api.schema import ERROR_REF
from campaigns.api.throttles import LoginFailureThrottle


class ObtainTokenView(ObtainAuthToken):
    """`POST /api/auth/token/` with {username, password} → {"token": …}.

    After ``AXES_FAILURE_LIMIT`` failed tries for one username or one address within the
    cool-off time, every try is a 429 with ``Retry-After`` (the login form shares the count).
    """

    # The API's JSON checks (nesting, NUL, lone surrogates) hold here too, before the
    # username reaches the lockout count or the database.
    parser_classes = [StrictJSONParser, FormParser]
    throttle_classes = [LoginFailureThrottle]

    @extend_schema(
        request=inline_serializer(
            "Token",
            {"username": serializers.CharField(), "password": serializers.CharField()},
        ),
        responses={
            200: inline_serializer("TokenResponse", {"token": serializers.CharField()}),
            429: OpenApiResponse(ERROR_REF, "Too many failed sign-ins; see Retry-After."),
        },
        auth=[],
    )
    def post(self, request, *args, **kwargs):
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        user = serializer.validated_data["user"]
        # A token is a sign-in: the lockout count starts again, as after the login form.
        user_logged_in.send(sender=type(user), request=request, user=user)
        token, _ = Token.objects.get_or_create(user=user)
        return Response({"token": token.key})
