"""OpenAPI details drf-spectacular cannot infer from the views.

- Every operation documents the error answers it can give (400 field errors, 401, 403,
  404), so clients and contract tests (schemathesis) know them.
- Request bodies of `StrictSerializer`s declare ``additionalProperties: false``: the API
  rejects unknown fields, and the schema says so.
"""

from __future__ import annotations

from drf_spectacular.openapi import AutoSchema

# Registered once (SPECTACULAR_SETTINGS["APPEND_COMPONENTS"]) and referenced everywhere.
ERROR_REF = {"$ref": "#/components/schemas/Error"}
ERROR_CODES = {
    "400": "Bad request: the body names each offending field.",
    "401": "Not authenticated.",
    "403": "Authenticated, but not allowed to do this.",
    "404": "Not found, or not visible to this user.",
    "413": "The body is over the size limit, which the message names.",
    "429": "Too many requests (writes per user, or failed sign-ins); see Retry-After.",
}


class BabelAutoSchema(AutoSchema):
    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction=direction)
        if direction != "response":
            return responses
        for code, description in ERROR_CODES.items():
            if code not in responses:
                response = self._get_response_for_code(dict(ERROR_REF), code)
                response["description"] = description
                responses[code] = response
        return responses

    def _map_basic_serializer(self, serializer, direction):
        from campaigns.api.serializers.base import StrictSerializer

        schema = super()._map_basic_serializer(serializer, direction)
        cls = serializer if isinstance(serializer, type) else type(serializer)
        if direction == "request" and issubclass(cls, StrictSerializer):
            schema["additionalProperties"] = False
        return schema
