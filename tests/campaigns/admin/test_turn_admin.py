"""Admin inspection as a superuser: changelists, every filter, the change forms."""

import pytest
from django.urls import reverse

from campaigns.models import Turn
from tests.factories import make_turn

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client_with_log(client, staff_user, campaign):
    make_turn(campaign, content="public tide", hinge=True, tags=["thread:door"])
    make_turn(
        campaign,
        speaker="Thorin",
        kind="whisper",
        content="secret whisper",
        visibility=["Thorin", "DM"],
    )
    make_turn(campaign, kind="gm_note", content="gm only note", visibility=["DM"], round=2)
    client.force_login(staff_user)
    return client


def _changelist(client, **params):
    response = client.get(reverse("admin:campaigns_turn_changelist"), params)
    assert response.status_code == 200
    return response.content.decode()


def test_changelist_shows_the_inspection_columns(admin_client_with_log):
    page = _changelist(admin_client_with_log)
    for column in (
        "Experiment",
        "Round",
        "Seq",
        "Speaker",
        "Kind",
        "Visibility",
        "Tokens",
        "Hinge",
    ):
        assert column in page
    assert "public tide" in page  # the content preview column
    assert page.count('class="field-seq"') == 3


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"kind__exact": "whisper"}, 1),
        ({"round__exact": "2"}, 1),
        ({"hinge__exact": "1"}, 1),
        ({"audience": "public"}, 1),
        ({"audience": "private"}, 2),
        ({"view_as": "Cassia"}, 1),
        ({"view_as": "Thorin"}, 2),
        ({"view_as": "DM"}, 3),
        ({"q": "whisper"}, 1),
    ],
)
def test_each_filter_narrows_the_turns(admin_client_with_log, campaign, params, expected):
    params = {"experiment__id__exact": str(campaign.pk), **params}
    page = _changelist(admin_client_with_log, **params)
    assert page.count('class="field-seq"') == expected


def test_view_as_never_shows_another_players_whisper(admin_client_with_log, campaign):
    page = _changelist(
        admin_client_with_log, experiment__id__exact=str(campaign.pk), view_as="Cassia"
    )
    assert "secret whisper" not in page
    assert "gm only note" not in page
    assert "public tide" in page


def test_turn_change_form_shows_token_count_read_only(admin_client_with_log):
    turn = Turn.objects.get(content="secret whisper")
    response = admin_client_with_log.get(reverse("admin:campaigns_turn_change", args=[turn.pk]))
    assert response.status_code == 200
    page = response.content.decode()
    assert 'name="tokens"' not in page
    assert str(turn.tokens) in page


def test_change_form_rejects_an_unknown_role_in_visibility(admin_client_with_log, campaign):
    turn = Turn.objects.get(content="secret whisper")
    response = admin_client_with_log.post(
        reverse("admin:campaigns_turn_change", args=[turn.pk]),
        {
            "experiment": campaign.pk,
            "round": 1,
            "speaker": "Thorin",
            "kind": "whisper",
            "content": "edited",
            "visibility": '["Thorin", "Ghost"]',
            "tags": "[]",
        },
    )
    assert response.status_code == 200
    assert "Unknown role" in response.content.decode()
    turn.refresh_from_db()
    assert turn.content == "secret whisper"


@pytest.mark.parametrize(
    "model", ["experiment", "participant", "loreentry", "summary", "contextevent"]
)
def test_other_changelists_render(admin_client_with_log, model):
    response = admin_client_with_log.get(reverse(f"admin:campaigns_{model}_changelist"))
    assert response.status_code == 200
