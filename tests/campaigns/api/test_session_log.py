"""`GET /api/experiments/{id}/log/` — the session log per audience, the console's bytes."""

from __future__ import annotations

import pytest

from campaigns.models import Turn
from tests.campaigns.api.conftest import ALLOWED, FORBIDDEN
from tests.campaigns.console.conftest import as_user  # noqa: F401 (the console client)

pytestmark = pytest.mark.django_db


def _url(exp, query: str = "") -> str:
    return f"/api/experiments/{exp.pk}/log/{query}"


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_the_api_log_is_the_consoles_download_byte_for_byte(
    api,
    as_user,  # noqa: F811
    secrets_campaign,
    player,
    owner,
    fmt,
):
    exp = secrets_campaign.experiment
    from_api = api(player).get(_url(exp, f"?format={fmt}"))
    from_console = as_user(player).get(f"/campaigns/{exp.pk}/log/?format={fmt}")
    assert from_api.status_code == from_console.status_code == 200
    assert from_api.content == from_console.content
    assert from_api["Content-Type"] == from_console["Content-Type"]
    assert from_api["Content-Disposition"] == from_console["Content-Disposition"]
    as_owner = api(owner).get(_url(exp, f"?as=Thorin&format={fmt}"))
    assert as_owner.content == from_api.content


def test_markdown_is_the_default_and_holds_only_the_players_audience(api, secrets_campaign, player):
    response = api(player).get(_url(secrets_campaign.experiment))
    assert response.status_code == 200
    assert response["Content-Type"] == "text/markdown; charset=utf-8"
    body = response.content.decode()
    assert ALLOWED["thorin_whisper"] in body and ALLOWED["public_lore"] in body
    for name, marker in FORBIDDEN.items():
        assert marker not in body, name


def test_a_bad_format_or_role_is_a_400_naming_the_field(api, secrets_campaign, owner, player):
    exp = secrets_campaign.experiment
    for bad in ("pdf", "", "MD", " md"):
        response = api(owner).get(_url(exp), {"format": bad})
        assert response.status_code == 400, bad
        assert list(response.json()) == ["format"]
    response = api(owner).get(_url(exp, "?as=Nobody"))
    assert response.status_code == 400
    assert list(response.json()) == ["as"]
    response = api(player).get(_url(exp, "?format=pdf"))
    assert response.status_code == 400 and list(response.json()) == ["format"]


def test_a_player_gets_a_403_for_any_other_role_and_nothing_is_stored(
    api, secrets_campaign, player
):
    exp = secrets_campaign.experiment
    before = Turn.objects.count()
    for role in ("Cassia", "DM", "Nobody"):
        response = api(player).get(_url(exp, f"?as={role}"))
        assert response.status_code == 403, role
        assert "own role" in response.json()["detail"]
    assert api(player).post(_url(exp), {}, format="json").status_code == 405
    assert Turn.objects.count() == before


def test_strangers_and_anonymous_callers_read_nothing(api, secrets_campaign, stranger):
    exp = secrets_campaign.experiment
    assert api(stranger).get(_url(exp)).status_code == 404
    assert api(None).get(_url(exp)).status_code in (401, 403)
    assert api(stranger).get("/api/experiments/999999/log/").status_code == 404
