"""Active retrieval through `POST …/commands/`: /search, /lore, /timeline (SPEC §5.8)."""

from __future__ import annotations

import pytest

from campaigns.models import RetrievalPin
from campaigns.services.lore import lore_create
from tests.factories import make_turn

pytestmark = pytest.mark.django_db


def url(experiment) -> str:
    return f"/api/experiments/{experiment.pk}/commands/"


@pytest.fixture
def told(campaign, owner):
    make_turn(campaign, round=2, content="Wren hides the brinewick oil under the pier.")
    make_turn(
        campaign,
        round=3,
        speaker="Cassia",
        kind="whisper",
        content="Cassia, to the DM: I steal the brinewick oil tonight.",
        visibility=["Cassia", "DM"],
    )
    make_turn(campaign, round=14, content="Where is the oil now?")
    lore_create(
        experiment=campaign,
        user=owner,
        term="brinewick oil",
        category="artifact",
        definition="Lamp oil that burns blue.",
        audience=None,
    )
    return campaign


def test_search_recovers_an_old_fact_for_the_role_and_pins_it(api, told, player):
    response = api(player).post(
        url(told), {"command": "search", "query": "brinewick oil"}, format="json"
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    rounds = [t["round"] for t in body["turns"]]
    assert rounds[0] == 2 and 3 not in rounds  # best-ranked first; never Cassia's whisper
    assert [e["term"] for e in body["lore"]] == ["brinewick oil"]
    assert body["role"] == "Thorin" and body["pinned"] is True
    pin = RetrievalPin.objects.get(experiment=told)
    assert (pin.role, pin.command, pin.query) == ("Thorin", "search", "brinewick oil")
    pack = api(player).get(f"/api/experiments/{told.pk}/context/Thorin/").json()
    retrieval = next(s for s in pack["sections"] if s["name"] == "retrieval")
    assert "under the pier" in retrieval["text"] and "steal" not in retrieval["text"]


def test_the_pin_lasts_until_the_role_acts(api, told, player):
    api(player).post(url(told), {"command": "timeline", "query": "2..2"}, format="json")
    section = lambda: next(  # noqa: E731
        s
        for s in api(player).get(f"/api/experiments/{told.pk}/context/Thorin/").json()["sections"]
        if s["name"] == "retrieval"
    )["text"]
    from campaigns.reads.selectors import viewer_for_role
    from campaigns.services.memory.retrieval import pinned_for_role

    def pinned():
        viewer = viewer_for_role(experiment=told, role="Thorin")
        return pinned_for_role(experiment_id=told.pk, role="Thorin", viewer=viewer)[0]

    assert "under the pier" in section() and pinned()
    make_turn(told, round=14, speaker="Thorin", kind="action", content="I dive.")
    # The pin is gone; ranked retrieval may still recall the turn on its own merit.
    assert pinned() == []


def test_lore_and_timeline_answer_as_the_role(api, told, owner):
    lore = api(owner).post(
        url(told), {"command": "lore", "query": "Brinewick Oils", "role": "Cassia"}, format="json"
    )
    assert lore.status_code == 200
    assert [e["definition"] for e in lore.json()["lore"]] == ["Lamp oil that burns blue."]
    timeline = api(owner).post(
        url(told), {"command": "timeline", "query": "2..3", "role": "Cassia"}, format="json"
    )
    assert [t["round"] for t in timeline.json()["turns"]] == [2, 3]
    thorin = api(owner).post(
        url(told), {"command": "timeline", "query": "2..3", "role": "Thorin"}, format="json"
    )
    assert [t["round"] for t in thorin.json()["turns"]] == [2]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"command": "timeline", "query": "five..six"}, "query"),
        ({"command": "timeline", "query": "5..2"}, "query"),
        ({"command": "search"}, "query"),
        ({"command": "search", "query": "x" * 201}, "query"),
        ({"command": "checkpoint", "query": "oil"}, "query"),
        ({"command": "grep", "query": "oil"}, "command"),
    ],
)
def test_a_bad_retrieval_request_is_a_400_naming_the_field(api, told, owner, body, field):
    response = api(owner).post(url(told), body, format="json")
    assert response.status_code == 400
    assert field in response.json()
    assert not RetrievalPin.objects.exists()


def test_a_player_searches_only_as_themselves_and_strangers_see_nothing(
    api, told, player, stranger
):
    other = api(player).post(
        url(told), {"command": "search", "query": "oil", "role": "Cassia"}, format="json"
    )
    assert other.status_code == 403
    hidden = api(stranger).post(url(told), {"command": "search", "query": "oil"}, format="json")
    assert hidden.status_code == 404
    checkpoint = api(player).post(url(told), {"command": "checkpoint"}, format="json")
    assert checkpoint.status_code == 403
    assert not RetrievalPin.objects.exists()


def test_a_judge_reads_any_pack_but_cannot_pin_lookups_into_another_roles(api, judge):
    experiment = judge.participations.get().experiment
    response = api(judge).post(
        url(experiment), {"command": "search", "query": "oil", "role": "Thorin"}, format="json"
    )
    assert response.status_code == 403
    assert not RetrievalPin.objects.filter(experiment=experiment, role="Thorin").exists()
