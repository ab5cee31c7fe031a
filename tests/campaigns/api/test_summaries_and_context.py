"""`…/summaries/` (digests by audience) and `…/context/{role}/` (the prompt pack)."""

from __future__ import annotations

import pytest

from campaigns.models import Experiment
from tests.factories import make_turn

pytestmark = pytest.mark.django_db


def summaries_url(experiment) -> str:
    return f"/api/experiments/{experiment.pk}/summaries/"


def context_url(experiment, role) -> str:
    return f"/api/experiments/{experiment.pk}/context/{role}/"


def _texts(response) -> set[str]:
    assert response.status_code == 200, response.json()
    return {summary["text"] for summary in response.json()["results"]}


def test_summaries_follow_the_readers_audience(api, secrets_campaign, owner, player):
    experiment = secrets_campaign.experiment
    everything = {"ZQX-dm-digest", "VIS-thorin-digest", "ZQX-cassia-strategic-summary"}
    assert _texts(api(owner).get(summaries_url(experiment))) == everything
    assert _texts(api(owner).get(summaries_url(experiment), {"as": "DM"})) == {"ZQX-dm-digest"}
    assert _texts(api(player).get(summaries_url(experiment))) == {"VIS-thorin-digest"}
    assert _texts(api(player).get(summaries_url(experiment), {"as": "Cassia"})) == {
        "VIS-thorin-digest"
    }


def test_summary_shape(api, secrets_campaign, player):
    summary = api(player).get(summaries_url(secrets_campaign.experiment)).json()["results"][0]
    assert summary["audience"] == ["Thorin"]
    assert summary["sections"] == [["Hinge Index", "VIS-thorin-digest"]]
    assert (summary["round_from"], summary["round_to"], summary["kind"]) == (1, 1, "digest")


def test_summaries_edges(api, secrets_campaign, owner, stranger):
    experiment = secrets_campaign.experiment
    assert api(stranger).get(summaries_url(experiment)).status_code == 404
    assert api(owner).get("/api/experiments/777777/summaries/").status_code == 404
    assert api(owner).post(summaries_url(experiment), {}, format="json").status_code == 405
    assert api(owner).get(summaries_url(experiment), {"as": "Ghost"}).status_code == 400


def test_the_context_is_the_pack_shape(api, campaign, owner):
    make_turn(campaign, content="The tide recedes from the archive door.")
    response = api(owner).get(context_url(campaign, "Thorin"), {"input": "I open the door."})
    assert response.status_code == 200, response.json()
    pack = response.json()
    assert set(pack) == {
        "role",
        "strategy",
        "budget",
        "total_tokens",
        "pressure",
        "strain",
        "sections",
        "messages",
    }
    assert pack["role"] == "Thorin"
    assert pack["strategy"] == "layered"
    assert isinstance(pack["budget"], int)
    # Each section's budget is its own share; what others lent it is "borrowed" (SPEC §5).
    assert pack["budget"] == sum(section["budget"] for section in pack["sections"])
    assert pack["total_tokens"] <= pack["budget"]
    names = [section["name"] for section in pack["sections"]]
    assert names[:3] == ["identity", "rules", "frozen"]
    assert set(pack["sections"][0]) == {"name", "budget", "borrowed", "tokens", "text", "trimmed"}
    assert "I open the door." in pack["messages"][-1]["content"]
    assert any("The tide recedes" in m["content"] for m in pack["messages"])


def test_debug_adds_the_trim_log(api, campaign, owner):
    pack = api(owner).get(context_url(campaign, "DM"), {"debug": "true"}).json()
    assert "trim_log" in pack
    assert "warnings" in pack


def test_the_context_reflects_the_experiments_strategy(api, campaign, owner):
    Experiment.objects.filter(pk=campaign.pk).update(config={"strategy": "full_history"})
    assert api(owner).get(context_url(campaign, "DM")).json()["strategy"] == "full_history"


def test_a_player_reads_only_their_own_pack(api, campaign, player):
    assert api(player).get(context_url(campaign, "Thorin")).status_code == 200
    for other in ("DM", "Cassia"):
        assert api(player).get(context_url(campaign, other)).status_code == 403


def test_an_unknown_role_is_404_naming_the_role(api, campaign, owner, player):
    response = api(owner).get(context_url(campaign, "Gandalf"))
    assert response.status_code == 404
    assert "Gandalf" in response.json()["detail"]
    assert api(player).get(context_url(campaign, "Gandalf")).status_code == 404


def test_context_edges(api, campaign, owner, stranger):
    assert api(stranger).get(context_url(campaign, "DM")).status_code == 404
    assert api(owner).get("/api/experiments/888888/context/DM/").status_code == 404
    assert api(owner).post(context_url(campaign, "DM"), {}, format="json").status_code == 405


def test_roles_with_spaces_and_apostrophes_work(api, owner):
    from tests.factories import make_experiment

    experiment = make_experiment(owner=owner, roles=("DM", "Old Mag'da"))
    response = api(owner).get(context_url(experiment, "Old Mag'da"))
    assert response.status_code == 200
    assert response.json()["role"] == "Old Mag'da"
