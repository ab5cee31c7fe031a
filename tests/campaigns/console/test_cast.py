"""`/campaigns/<id>/cast/` (issue 24): add, edit and remove participants, each field
cleaned by `participant_fields` as `POST /api/experiments/{id}/participants/` is."""

import html

import pytest
from django.urls import reverse

from campaigns.models import Participant
from tests.campaigns.api.conftest import FORBIDDEN, client_for
from tests.campaigns.console.conftest import HX, is_fragment
from tests.campaigns.console.matrix import check_get
from tests.factories import make_turn

pytestmark = pytest.mark.django_db

WRITE = {"owner": 200, "staff": 200, "player": 403, "stranger": 404, "anonymous": "login"}
REFUSED = [("player", 403), ("stranger", 404), ("anonymous", 302)]


def url(exp, name="console:cast", *args):
    return reverse(name, args=[exp.pk, *args])


def seat(prefix="new", **fields):
    data = {
        "role": "Wren",
        "kind": "player",
        "model": "offline",
        "bio": "A lamplighter.",
        "identity": "Play Wren.",
        "secret": "Wren owes the Geometers.",
        "reveal_round": "5",
        "temperature": "0.7",
        "max_output_tokens": "400",
        "order": "",
    }
    data.update(fields)
    return {f"{prefix}-{key}": value for key, value in data.items()}


def cast_of(exp):
    return list(
        exp.participants.order_by("order", "id").values_list(
            "role", "kind", "model", "bio", "secret", "temperature", "order"
        )
    )


@pytest.mark.parametrize("persona", WRITE)
def test_the_cast_page_over_the_permission_matrix(as_user, personas, exp, persona):
    check_get(as_user(personas[persona]), url(exp), WRITE[persona], marker='id="cast"')


def test_the_cast_page_offers_the_model_presets(as_user, owner, exp):
    body = as_user(owner).get(url(exp)).content.decode()
    assert 'list="model-presets"' in body
    for model in ("offline", "human", "gemini-2.5-flash", "openai:default"):
        assert f'<option value="{model}">' in body


def test_adding_a_participant_stores_every_field(as_user, owner, exp):
    response = as_user(owner).post(url(exp), seat(), **HX)
    assert response.status_code == 200 and is_fragment(response)
    wren = exp.participants.get(role="Wren")
    assert (wren.kind, wren.model, wren.secret, wren.reveal_round) == (
        "player",
        "offline",
        "Wren owes the Geometers.",
        5,
    )
    assert (wren.temperature, wren.max_output_tokens, wren.order) == (0.7, 400, 3)
    assert "seat-" + str(wren.pk) in response.content.decode()


@pytest.mark.parametrize(
    "field,value,message,api_value",
    [
        ("temperature", "2.5", "Temperature must be a number from 0 to 2.", 2.5),
        ("max_output_tokens", "0", "Max output tokens must be a whole number from 1 to", 0),
        ("reveal_round", "999999999", "Round must be at most", 999999999),
        ("role", " Wren", "A role is 1–64 letters", " Wren"),
        ("role", "Thorin", "Role 'Thorin' already exists in this experiment.", "Thorin"),
        ("order", "99999999999", "Order must be a whole number from 0 to 2147483647.", None),
        ("kind", "villain", "Select a valid choice.", None),
        ("temperature", "warm", "Enter a number.", None),
    ],
)
def test_a_bad_field_names_itself_stores_nothing_and_matches_the_api(
    as_user, owner, exp, field, value, message, api_value
):
    before = cast_of(exp)
    response = as_user(owner).post(url(exp), seat(**{field: value}), **HX)
    assert response.status_code == 422
    body = response.content.decode()
    block = body.split('id="add-seat"', 1)[1].split(f'data-field="{field}"', 1)[1]
    assert html.escape(message) in block.split('data-field="', 1)[0]
    assert cast_of(exp) == before
    if api_value is not None:  # the API refuses the same value, naming the same field
        api = client_for(owner).post(
            f"/api/experiments/{exp.pk}/participants/",
            {"role": "Wren", field: api_value} if field != "role" else {"role": api_value},
            format="json",
        )
        assert api.status_code == 400
        assert field in api.json()


def test_editing_a_seat_changes_its_fields_through_the_service(
    as_user, owner, exp, settings, gemini_standin
):
    # A new model is asked when it is saved, as the API asks it: here a Gemini stand-in.
    settings.GEMINI_API_KEY = "standin-key"
    settings.GEMINI_BASE_URL = gemini_standin.base_url
    cassia = exp.participants.get(role="Cassia")
    response = as_user(owner).post(
        url(exp, "console:participant", cassia.pk),
        seat(prefix=f"p{cassia.pk}", role="Cassia", model="gemini-2.5-flash", temperature=""),
        **HX,
    )
    assert response.status_code == 200
    cassia.refresh_from_db()
    assert (cassia.model, cassia.temperature, cassia.bio) == (
        "gemini-2.5-flash",
        None,
        "A lamplighter.",
    )


def test_a_bad_edit_re_opens_that_seat_with_its_error_and_stores_nothing(as_user, owner, exp):
    cassia = exp.participants.get(role="Cassia")
    before = cast_of(exp)
    response = as_user(owner).post(
        url(exp, "console:participant", cassia.pk),
        seat(prefix=f"p{cassia.pk}", role="Cassia", temperature="9"),
        **HX,
    )
    assert response.status_code == 422
    body = response.content.decode()
    assert "Temperature must be a number from 0 to 2." in body.split(f'id="seat-{cassia.pk}"')[1]
    assert cast_of(exp) == before


def test_a_role_in_the_log_keeps_its_name_and_cannot_be_removed(as_user, owner, exp):
    make_turn(exp, speaker="Cassia", kind="action", content="Cassia reads the door.")
    cassia = exp.participants.get(role="Cassia")
    client = as_user(owner)
    renamed = client.post(
        url(exp, "console:participant", cassia.pk), seat(prefix=f"p{cassia.pk}", role="Cass"), **HX
    )
    assert renamed.status_code == 422 and "its name cannot change" in renamed.content.decode()
    removed = client.post(url(exp, "console:participant_remove", cassia.pk), **HX)
    assert removed.status_code == 422 and "cannot be removed" in removed.content.decode()
    assert exp.participants.filter(role="Cassia").exists()


def test_a_role_only_named_in_a_whisper_is_in_the_log_too(as_user, owner, exp):
    make_turn(exp, speaker="DM", kind="whisper", content="psst", visibility=["Cassia", "DM"])
    cassia = exp.participants.get(role="Cassia")
    response = as_user(owner).post(url(exp, "console:participant_remove", cassia.pk), **HX)
    assert response.status_code == 422
    assert exp.participants.filter(role="Cassia").exists()


def test_a_seat_with_no_history_is_removed_after_asking(as_user, owner, exp):
    client = as_user(owner)
    client.post(url(exp), seat())
    wren = exp.participants.get(role="Wren")
    assert 'hx-confirm="Remove Wren from the cast?"' in client.get(url(exp)).content.decode()
    response = client.post(url(exp, "console:participant_remove", wren.pk), **HX)
    assert response.status_code == 200
    assert not exp.participants.filter(role="Wren").exists()


@pytest.mark.parametrize("persona,status", REFUSED)
def test_only_editors_change_the_cast(as_user, personas, exp, persona, status):
    client = as_user(personas[persona])
    cassia = exp.participants.get(role="Cassia")
    before = cast_of(exp)
    assert client.post(url(exp), seat()).status_code == status
    edit = seat(prefix=f"p{cassia.pk}", role="Cassia", model="offline")
    assert client.post(url(exp, "console:participant", cassia.pk), edit).status_code == status
    assert client.post(url(exp, "console:participant_remove", cassia.pk)).status_code == status
    assert cast_of(exp) == before


def test_a_seat_of_another_campaign_or_a_junk_id_is_404(as_user, owner, exp, staff_user):
    from tests.factories import make_experiment

    other = make_experiment(owner=staff_user)
    theirs = other.participants.first()
    client = as_user(owner)
    for pid in (theirs.pk, "abc", "99999999999999999999999"):
        assert client.post(url(exp, "console:participant", pid), {}).status_code == 404
        assert client.post(url(exp, "console:participant_remove", pid)).status_code == 404
    assert Participant.objects.filter(pk=theirs.pk).exists()


def test_the_cast_page_shows_secrets_only_to_editors(as_user, owner, player, exp):
    assert FORBIDDEN["cassia_secret"] in as_user(owner).get(url(exp)).content.decode()
    assert as_user(player).get(url(exp)).status_code == 403


def test_a_model_whose_server_does_not_answer_is_refused_on_its_field(as_user, owner, exp):
    cassia = exp.participants.get(role="Cassia")
    before = cast_of(exp)
    response = as_user(owner).post(
        url(exp, "console:participant", cassia.pk),
        {
            **seat(prefix=f"p{cassia.pk}", role="Cassia", model="llamacpp:tiny"),
            f"p{cassia.pk}-base_url": "http://127.0.0.1:9/v1",  # nothing listens there
        },
        **HX,
    )
    assert response.status_code == 422
    assert "127.0.0.1:9" in response.content.decode()
    assert cast_of(exp) == before, "nothing stored"


def test_test_connection_reports_the_server_its_model_and_window_and_never_the_key(
    as_user, owner, exp, openai_standin
):
    cassia = exp.participants.get(role="Cassia")
    cassia.model = "llamacpp:standin"
    cassia.base_url = openai_standin.base_url
    cassia.api_key = "sk-very-secret"
    cassia.save()
    response = as_user(owner).post(url(exp, "console:participant_test", cassia.pk), **HX)
    body = response.content.decode()
    assert response.status_code == 200
    assert "Connected:" in body and "window" in body
    assert "sk-very-secret" not in body


def test_only_the_owner_side_tests_a_connection(as_user, player, stranger, exp):
    cassia = exp.participants.get(role="Cassia")
    assert as_user(player).post(url(exp, "console:participant_test", cassia.pk)).status_code == 403
    assert (
        as_user(stranger).post(url(exp, "console:participant_test", cassia.pk)).status_code == 404
    )
