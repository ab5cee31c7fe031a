"""`POST, DELETE /api/auth/token/`: a token for ``Authorization: Token …``, and its revocation
(`campaigns.services.tokens`: also revoked by signing out and by a password change)."""

from __future__ import annotations

from django.contrib.auth.signals import user_logged_in
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.parsers import FormParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from campaigns.api.parsers import StrictJSONParser
from campaigns.api.schema import ERROR_REF
from campaigns.api.throttles import LoginFailureThrottle
from campaigns.services.tokens import token_get_or_create, token_revoke


class ObtainTokenView(ObtainAuthToken):
    """`POST /api/auth/token/` with {username, password} → {"token": …};
    `DELETE /api/auth/token/` (signed in) revokes the caller's token.

    After ``AXES_FAILURE_LIMIT`` failed tries for one username or one address within the
    cool-off time, every try is a 429 with ``Retry-After`` (the login form shares the count).
    """

    # The API's JSON checks (nesting, NUL, lone surrogates) hold here too, before the
    # username reaches the lockout count or the database.
    parser_classes = [StrictJSONParser, FormParser]
    throttle_classes = [LoginFailureThrottle]

    def get_permissions(self):
        # Signing in needs no credentials beyond the body; revoking needs a signed-in caller.
        if self.request.method == "DELETE":
            return [IsAuthenticated()]
        return super().get_permissions()

    def get_throttles(self):
        return [] if self.request.method == "DELETE" else super().get_throttles()

    @extend_schema(
        description=(
            "A token for `Authorization: Token …`. Until it is revoked the same token comes "
            "back on every sign-in; `DELETE /api/auth/token/`, signing out of the console "
            "and a password change revoke it, and the next sign-in returns a new one."
        ),
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
        return Response({"token": token_get_or_create(user=user).key})

    @extend_schema(
        description=(
            "Revoke the caller's token: it authenticates nothing from now on, and the next "
            "`POST /api/auth/token/` returns a different one. Answers 204 whether or not a "
            "token existed. Also done by signing out of the console and by a password change."
        ),
        request=None,
        responses={
            204: OpenApiResponse(description="Revoked."),
            401: OpenApiResponse(ERROR_REF, "Not signed in (no valid token or session)."),
        },
    )
    def delete(self, request, *args, **kwargs):
        token_revoke(user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
