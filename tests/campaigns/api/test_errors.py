"""One error shape: every bad request is a 400 whose body names the field."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from campaigns.api.exceptions import exception_handler
from campaigns.models import Experiment, LoreEntry, Participant, Turn
from tests.factories import make_turn

pytestmark = pytest.mark.django_db

TURN = {"round": 1, "speaker": "DM", "kind": "narrative", "content": "Fine."}


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"round": "1"}, "round"),
        ({"round": 1.5}, "round"),
        ({"round": True}, "round"),
        ({"hinge": "true"}, "hinge"),
        ({"hinge": 1}, "hinge"),
        ({"speaker": 5}, "speaker"),
        ({"kind": 3}, "kind"),
        ({"content": 42}, "content"),
        ({"tags": [1, 2]}, "tags"),
    ],
)
def test_json_types_are_not_coerced(api, campaign, owner, changes, field):
    response = api(owner).post(
        f"/api/experiments/{campaign.pk}/turns/", {**TURN, **changes}, format="json"
    )
    assert response.status_code == 400
    assert field in response.json(), response.json()
    assert Turn.objects.count() == 0


@pytest.mark.parametrize(
    ("path", "body", "field", "model"),
    [
        ("/api/experiments/", {"name": 7}, "name", Experiment),
        ("/api/experiments/", {"name": "X", "hook": None}, "hook", Experiment),
        ("/api/experiments/{e}/participants/", {"role": "X", "user": "1"}, "user", Participant),
        ("/api/experiments/{e}/participants/", {"role": "X", "user": 2**70}, "user", Participant),
        ("/api/experiments/{e}/participants/", {"role": "X", "order": "2"}, "order", Participant),
        ("/api/experiments/{e}/lore/", {"term": ["list"]}, "term", LoreEntry),
    ],
)
def test_other_bodies_are_typed_too(api, campaign, owner, path, body, field, model):
    before = model.objects.count()
    response = api(owner).post(path.format(e=campaign.pk), body, format="json")
    assert response.status_code == 400
    assert field in response.json(), response.json()
    assert model.objects.count() == before


def test_every_unknown_field_is_named(api, campaign, owner):
    body = {**TURN, "colour": "red", "mood": "grim"}
    response = api(owner).post(f"/api/experiments/{campaign.pk}/turns/", body, format="json")
    assert response.status_code == 400
    assert {"colour", "mood"} <= set(response.json())
    assert Turn.objects.count() == 0


@pytest.mark.parametrize("page_size", ["0", "-3", "abc", "501", "1.5"])
def test_a_bad_page_size_is_400_naming_it(api, campaign, owner, page_size):
    response = api(owner).get(f"/api/experiments/{campaign.pk}/turns/", {"page_size": page_size})
    assert response.status_code == 400
    assert "page_size" in response.json()


@pytest.mark.parametrize("page", ["", "0", "last", "x", "-1", "1.5", "٣"])
def test_a_page_that_is_not_a_whole_number_from_1_is_a_400_naming_it(api, campaign, owner, page):
    make_turn(campaign)
    response = api(owner).get(f"/api/experiments/{campaign.pk}/turns/", {"page": page})
    assert response.status_code == 400
    assert "page" in response.json()


def test_a_page_past_the_end_is_404(api, campaign, owner):
    make_turn(campaign)
    response = api(owner).get(f"/api/experiments/{campaign.pk}/turns/", {"page": 2})
    assert response.status_code == 404


def test_django_validation_errors_become_field_keyed_400s():
    keyed = exception_handler(ValidationError({"visibility": ["Unknown role."]}), {})
    assert keyed.status_code == 400
    assert keyed.data == {"visibility": ["Unknown role."]}
    bare = exception_handler(ValidationError("Something is off."), {})
    assert bare.status_code == 400
    assert bare.data == {"non_field_errors": ["Something is off."]}


def test_other_exceptions_are_left_to_drf():
    assert exception_handler(RuntimeError("boom"), {}) is None


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        (
            "/api/experiments/",
            '{"name": "x", "config": {"summarizer_model": "\\ud800"}}',
            "config.summarizer_model",
        ),
        (
            "/api/experiments/{e}/turns/",
            '{"round": 1, "speaker": "DM", "kind": "narrative", "content": "a\\ud800b"}',
            "content",
        ),
        ("/api/experiments/{e}/participants/", '{"role": "X", "bio": "\\udfff"}', "bio"),
        (
            "/api/import/",
            '{"experiment": {"name": "\\ud800"}, "participants": [], "turns": []}',
            "experiment.name",
        ),
        ("/api/auth/token/", '{"username": "\\ud800", "password": "x"}', "username"),
        (
            "/api/experiments/",
            '{"name": "x", "config": {"summarizer_model": "a\\u0000b"}}',
            "config.summarizer_model",
        ),
        (
            "/api/experiments/{e}/turns/",
            '{"round": 1, "speaker": "DM", "kind": "action", "content": "ok", '
            '"tags": ["a\\u0000"]}',
            "tags[0]",
        ),
        (
            "/api/import/",
            '{"experiment": {"name": "x", "config": {"\\u0000": 1}}, "participants": [], '
            '"turns": []}',
            "experiment.config",
        ),
    ],
)
def test_unstorable_text_is_a_400_naming_where_it_is(api, campaign, owner, path, body, field):
    """JSON can spell text (lone surrogates, NUL) that no database or UTF-8 response
    holds; it is refused, naming its place, before anything is stored."""
    counts = (Experiment.objects.count(), Turn.objects.count(), Participant.objects.count())
    response = api(owner).post(
        path.format(e=campaign.pk), data=body, content_type="application/json"
    )
    assert response.status_code == 400
    assert field in response.json(), response.json()
    assert counts == (Experiment.objects.count(), Turn.objects.count(), Participant.objects.count())
    assert api(owner).get("/api/experiments/").status_code == 200


@pytest.mark.parametrize(
    ("path", "param"),
    [
        ("/api/experiments/", "page"),
        ("/api/experiments/{id}/participants/", "as"),
        ("/api/experiments/{id}/turns/", "kind"),
        ("/api/experiments/{id}/turns/", "as"),
        ("/api/experiments/{id}/lore/", "as"),
        ("/api/experiments/{id}/summaries/", "as"),
        ("/api/experiments/{id}/context/DM/", "input"),
    ],
)
def test_a_nul_in_any_query_parameter_is_a_400_naming_it(api, campaign, owner, path, param):
    response = api(owner).get(path.format(id=campaign.pk), {param: "Thor\x00in"})
    assert response.status_code == 400
    assert "NUL" in response.json()[param][0]


@pytest.mark.parametrize(
    ("path", "param", "values"),
    [
        ("/api/experiments/{id}/usage/", "round", ["{}", "0.0"]),
        ("/api/experiments/{id}/turns/", "round", ["1", "2"]),
        ("/api/experiments/{id}/turns/", "as", ["DM", "Thorin"]),
        ("/api/experiments/", "page", ["1", "1"]),
    ],
)
def test_a_query_parameter_given_twice_is_a_400_naming_it(
    api, campaign, owner, path, param, values
):
    response = api(owner).get(path.format(id=campaign.pk), {param: values})
    assert response.status_code == 400
    assert response.json() == {param: ["Give this parameter once."]}


def test_a_length_limit_holds_for_the_text_as_sent_not_only_after_trimming(api, campaign, owner):
    from campaigns.models import LoreEntry

    term = "\x1e" + "x" * 200  # 201 characters; Python strips the leading \x1e
    response = api(owner).post(
        f"/api/experiments/{campaign.pk}/lore/", {"term": term, "definition": "d"}, format="json"
    )
    assert response.status_code == 400
    assert "term" in response.json()
    assert not LoreEntry.objects.filter(experiment=campaign).exists()
