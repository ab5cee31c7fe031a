"""Attacker-side: a model's server settings are requests this server makes, and a key is
a secret. A player cannot read a key or reach the settings; an owner cannot point the
server at an address the operator did not allow (cloud metadata, the LAN), by a
participant, "Test connection" or the memory workers' base URL."""

from __future__ import annotations

import pytest

from campaigns.models import Participant

pytestmark = pytest.mark.django_db

METADATA = "http://169.254.169.254/latest/v1"
KEY = "sk-live-do-not-leak"


def participants(experiment) -> str:
    return f"/api/experiments/{experiment.pk}/participants/"


@pytest.fixture
def keyed(campaign):
    campaign.participants.filter(role="DM").update(
        model="vllm:qwen", base_url="http://127.0.0.1:8000/v1", api_key=KEY
    )
    return campaign


def test_no_reader_ever_gets_the_key(api, keyed, owner, player, other_player):
    for user in (owner, player, other_player):
        for path in (participants(keyed), f"/api/experiments/{keyed.pk}/export/"):
            response = api(user).get(path)
            assert KEY.encode() not in response.content, (user, path)
    assert Participant.objects.get(experiment=keyed, role="DM").api_key == KEY


def test_a_player_can_neither_change_nor_test_a_models_server(api, keyed, player):
    dm = keyed.participants.get(role="DM")
    changed = api(player).patch(
        f"{participants(keyed)}{dm.pk}/", {"base_url": "http://127.0.0.1:1/v1"}, format="json"
    )
    tested = api(player).post(f"{participants(keyed)}{dm.pk}/test-connection/", {}, format="json")
    assert (changed.status_code, tested.status_code) == (403, 403)
    assert KEY.encode() not in tested.content
    dm.refresh_from_db()
    assert dm.base_url == "http://127.0.0.1:8000/v1"


@pytest.mark.parametrize("address", [METADATA, "http://10.0.0.5:11434/v1", "http://[fd00::1]/v1"])
def test_an_owner_cannot_aim_the_server_at_an_address_not_allowed(api, keyed, owner, address):
    dm = keyed.participants.get(role="DM")
    body = {"model": "ollama:llama3", "base_url": address}
    for response in (
        api(owner).patch(f"{participants(keyed)}{dm.pk}/", body, format="json"),
        api(owner).post(f"{participants(keyed)}{dm.pk}/test-connection/", body, format="json"),
        api(owner).post(participants(keyed), {"role": "Mole", **body}, format="json"),
        api(owner).patch(
            f"/api/experiments/{keyed.pk}/",
            {"config": {"memory_model": "ollama:llama3", "memory_base_url": address}},
            format="json",
        ),
    ):
        assert response.status_code == 400, response.content
        assert "base_url" in str(response.json())
    dm.refresh_from_db()
    keyed.refresh_from_db()
    assert dm.base_url == "http://127.0.0.1:8000/v1"
    assert not Participant.objects.filter(role="Mole").exists()
    assert "memory_base_url" not in (keyed.config or {})


def test_the_process_key_never_goes_to_an_owners_own_server(
    api, keyed, owner, settings, local_server
):
    """OPENAI_API_KEY belongs to OPENAI_BASE_URL: an owner's own server never sees it."""
    server = local_server("openai")
    settings.OPENAI_API_KEY = "sk-operator-key"
    dm = keyed.participants.get(role="DM")
    body = {"model": "openai:qwen", "base_url": server.base_url, "api_key": None}
    assert (
        api(owner).patch(f"{participants(keyed)}{dm.pk}/", body, format="json").status_code == 200
    )
    assert server.requests
    assert all("sk-operator-key" not in r.headers.get("authorization", "") for r in server.requests)


def test_only_the_editor_reading_as_themself_sees_a_models_connection(api, keyed, owner, player):
    keyed.participants.filter(role="DM").update(timeout_s=300, context_window=8192)
    connection = ("base_url", "api_key_set", "timeout_s", "context_window")

    def dm_row(user, query=""):
        rows = api(user).get(participants(keyed) + query).json()["results"]
        return next(row for row in rows if row["role"] == "DM")

    shown = dm_row(owner)
    assert [shown[f] for f in connection] == ["http://127.0.0.1:8000/v1", True, 300, 8192]
    for seen in (dm_row(player), dm_row(owner, "?as=Thorin")):
        assert [seen[f] for f in connection] == [None, None, None, None], seen
