"""Finding 3 and 5: a deeply nested JSON body was a RecursionError 500 (with the debug page
showing every URL in settings), and a body over the upload limit an HTML 400. Every bad
body is now a JSON 4xx, on every operation of the API."""

from __future__ import annotations

import pytest
from django.conf import settings
from drf_spectacular.generators import SchemaGenerator

from campaigns.models import Experiment, Job, Turn
from tests.factories import make_turn

pytestmark = pytest.mark.django_db

NESTED = "[" * 2000 + "]" * 2000
NOT_UTF8 = b'{"content": "\xff\xfe caf\xe9"}'


def assert_json_4xx(response, *statuses):
    assert response.status_code in statuses, (response.status_code, response.content[:200])
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert isinstance(body, dict) and body
    text = response.content.decode()
    assert "DATABASE_URL" not in text and "Traceback" not in text


def test_a_nested_body_to_the_token_endpoint_is_a_json_400_for_anyone(api):
    response = api(None).post("/api/auth/token/", NESTED, content_type="application/json")
    assert_json_4xx(response, 400)
    assert "nest" in response.json()["detail"]


def test_a_nested_body_to_turns_stores_nothing(api, campaign, owner):
    url = f"/api/experiments/{campaign.pk}/turns/"
    response = api(owner).post(url, NESTED, content_type="application/json")
    assert_json_4xx(response, 400)
    assert not Turn.objects.exists()


def test_nesting_just_past_the_limit_is_refused_and_at_the_limit_it_parses(api, campaign, owner):
    depth = settings.BABEL_MAX_JSON_DEPTH
    config = {"a": 1}  # one level; the body around it is another
    for _ in range(depth - 2):
        config = {"a": config}
    url = f"/api/experiments/{campaign.pk}/"
    at_limit = api(owner).patch(url, {"config": config}, format="json")
    past = api(owner).patch(url, {"config": {"a": config}}, format="json")

    # At the limit the body parses, and the service judges the config (an unknown key).
    assert at_limit.status_code == 400 and "config.a" in at_limit.json()
    assert_json_4xx(past, 400)
    assert "nest" in past.json()["detail"]


def test_invalid_utf8_is_a_json_400(api, campaign, owner):
    url = f"/api/experiments/{campaign.pk}/turns/"
    response = api(owner).post(url, NOT_UTF8, content_type="application/json")
    assert_json_4xx(response, 400)
    assert not Turn.objects.exists()


def test_a_body_over_the_limit_is_a_413_naming_the_limit(api, campaign, owner):
    url = f"/api/experiments/{campaign.pk}/turns/"
    body = b'{"content": "' + b"x" * settings.DATA_UPLOAD_MAX_MEMORY_SIZE + b'"}'
    response = api(owner).post(url, body, content_type="application/json")
    assert_json_4xx(response, 413)
    assert str(settings.DATA_UPLOAD_MAX_MEMORY_SIZE) in response.json()["detail"]
    assert "BABEL_MAX_BODY_BYTES" in response.json()["detail"]
    assert not Turn.objects.exists()


def test_an_oversized_login_form_is_a_plain_413_page(client):
    body = "username=a&password=" + "x" * settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    response = client.post(
        "/accounts/login/", body, content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 413
    assert response["Content-Type"].startswith("text/html")
    assert b"limit" in response.content


# -- every operation of the schema ---------------------------------------------------------


def operations():
    schema = SchemaGenerator().get_schema(request=None, public=True)
    for path, item in sorted(schema["paths"].items()):
        for method, operation in sorted(item.items()):
            yield pytest.param(path, method, "requestBody" in operation, id=f"{method} {path}")


@pytest.fixture
def filled(campaign, owner):
    turn = make_turn(campaign, content="A turn.")
    job = Job.objects.create(experiment=campaign, kind=Job.Kind.CHECKPOINT)
    from campaigns.services.lore import lore_create

    entry = lore_create(
        experiment=campaign,
        user=owner,
        term="Vane",
        category="npc",
        definition="A lord.",
        audience=None,
    )
    from campaigns.services.experiments import participant_create
    from campaigns.services.seats import invitation_create

    participant_create(experiment=campaign, role="Seat")
    invitation = invitation_create(
        experiment=campaign, role="Seat", username="owner", invited_by=owner
    )
    return {
        "{id}": str(campaign.pk),
        "{iid}": str(invitation.pk),
        "{lid}": str(entry.pk),
        "{pid}": str(campaign.participants.get(role="DM").pk),
        "{role}": "DM",
        "{task_id}": str(job.pk),
        "{tid}": str(turn.pk),
        "turn": turn,
    }


def concrete(path: str, filled: dict) -> str:
    for placeholder, value in filled.items():
        if placeholder.startswith("{"):
            path = path.replace(placeholder, value)
    return path


BAD_BODIES = {
    "nested": (NESTED.encode(), (400,)),
    "not utf-8": (NOT_UTF8, (400,)),
}


@pytest.mark.parametrize(("path", "method", "takes_body"), list(operations()))
def test_every_operation_answers_bad_bodies_with_a_json_4xx(
    api, filled, owner, path, method, takes_body
):
    url = concrete(path, filled)
    client = api(owner)

    def call(url, body, **extra):
        return client.generic(method.upper(), url, body, **extra)

    counts = (Experiment.objects.count(), Turn.objects.count())
    limit = settings.BABEL_MAX_IMPORT_BYTES if path == "/api/import/" else None
    oversize_length = (limit or settings.DATA_UPLOAD_MAX_MEMORY_SIZE) + 1

    # Oversize: judged on the declared length, before a byte is read (so the test need not
    # allocate 256 MB for the import's own limit).
    response = call(
        url, b"{}", content_type="application/json", CONTENT_LENGTH=str(oversize_length)
    )
    assert_json_4xx(response, 413)
    if takes_body:
        for body, statuses in BAD_BODIES.values():
            response = call(url, body, content_type="application/json")
            assert_json_4xx(response, *statuses)
    assert counts == (Experiment.objects.count(), Turn.objects.count())
