"""OpenAPI: `/api/schema/` covers SPEC §8, validates, and `/api/docs/` works offline."""

from __future__ import annotations

import re

import pytest
from django.contrib.staticfiles import finders
from django.core.management import call_command
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

SPEC_OPERATIONS = {
    "/api/auth/token/": {"post", "delete"},
    "/api/experiments/": {"get", "post"},
    "/api/experiments/{id}/": {"get", "patch", "delete"},
    "/api/experiments/{id}/participants/": {"get", "post"},
    "/api/experiments/{id}/participants/{pid}/": {"patch"},
    "/api/experiments/{id}/participants/{pid}/test-connection/": {"post"},
    "/api/experiments/{id}/usage/": {"get"},
    "/api/experiments/{id}/turns/": {"get", "post"},
    "/api/experiments/{id}/turns/{tid}/": {"get", "patch"},
    "/api/experiments/{id}/turns/{tid}/regenerate/": {"post"},
    "/api/experiments/{id}/turns/{tid}/reveal/": {"post"},
    "/api/experiments/{id}/held/": {"get"},
    "/api/experiments/{id}/held/{tid}/publish/": {"post"},
    "/api/experiments/{id}/held/{tid}/edit/": {"post"},
    "/api/experiments/{id}/held/{tid}/discard/": {"post"},
    "/api/experiments/{id}/lore/": {"get", "post"},
    "/api/experiments/{id}/lore/{lid}/": {"get", "patch"},
    "/api/experiments/{id}/summaries/": {"get"},
    "/api/experiments/{id}/context/{role}/": {"get"},
    "/api/experiments/{id}/commands/": {"post"},
    "/api/experiments/{id}/rounds/": {"post"},
    "/api/tasks/{task_id}/": {"get"},
    "/api/tasks/{task_id}/skip/": {"post"},
    "/api/experiments/{id}/export/": {"get"},
    "/api/experiments/{id}/log/": {"get"},
    "/api/experiments/{id}/facts/": {"get"},
    "/api/experiments/{id}/arena/": {"get", "post"},
    "/api/import/": {"post"},
    "/api/experiments/{id}/invitations/": {"get", "post"},
    "/api/experiments/{id}/invitations/{iid}/": {"delete"},
    "/api/invitations/": {"get"},
    "/api/invitations/{iid}/accept/": {"post"},
    "/api/invitations/{iid}/decline/": {"post"},
}
HTTP_METHODS = {"get", "post", "put", "patch", "delete"}


@pytest.fixture
def schema() -> dict:
    response = APIClient().get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    return response.json()


def test_the_schema_has_exactly_the_spec_endpoints(schema):
    operations = {
        path: {method for method in item if method in HTTP_METHODS}
        for path, item in schema["paths"].items()
    }
    assert operations == SPEC_OPERATIONS


def test_the_context_response_documents_the_pack_shape(schema):
    ref = schema["paths"]["/api/experiments/{id}/context/{role}/"]["get"]["responses"]["200"]
    name = ref["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    properties = schema["components"]["schemas"][name]["properties"]
    assert {"role", "strategy", "budget", "total_tokens", "pressure", "strain"} <= set(properties)
    assert properties["budget"]["type"] == "integer"


def test_request_bodies_forbid_unknown_fields(schema):
    components = schema["components"]["schemas"]
    for name in (
        "TurnCreateRequest",
        "ExperimentCreateRequest",
        "PatchedLoreUpdateRequest",
        "ArenaStartRequest",
    ):
        assert components[name]["additionalProperties"] is False, name


def test_every_operation_documents_its_errors(schema):
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if method in HTTP_METHODS:
                assert {"400", "401", "403", "404"} <= set(operation["responses"]), (path, method)


def test_lists_document_pagination(schema):
    parameters = schema["paths"]["/api/experiments/{id}/turns/"]["get"]["parameters"]
    names = {parameter["name"] for parameter in parameters}
    assert {"page", "page_size", "as", "round", "kind"} <= names


def test_the_schema_validates_without_warnings(tmp_path):
    out = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))
    assert out.read_text().startswith("openapi: 3")


def test_swagger_ui_loads_only_local_assets():
    response = APIClient().get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert not re.findall(r"https?://", html), "the docs page must not need the internet"
    assets = re.findall(r'(?:src|href)="(/static/[^"]+)"', html)
    assert any(asset.endswith("swagger-ui-bundle.js") for asset in assets)
    for asset in assets:
        assert finders.find(asset.removeprefix("/static/")), asset
    # The start-up script is a file of its own (no inline script under the CSP).
    assert not re.search(r"<script>(?!</script>)", html)
    script = APIClient().get("/api/docs/", {"script": ""})
    assert script.status_code == 200
    assert script["Content-Type"].startswith("application/javascript")
    assert '"/api/schema/"' in script.content.decode()
