"""`/api/experiments/{id}/turns/`: the log by seq, filtered by role, round and kind."""

from __future__ import annotations

import pytest

from campaigns.models import Turn
from tests.factories import make_experiment, make_turn

pytestmark = pytest.mark.django_db


def url(experiment) -> str:
    return f"/api/experiments/{experiment.pk}/turns/"


def _contents(response) -> list[str]:
    assert response.status_code == 200, response.json()
    return [turn["content"] for turn in response.json()["results"]]


@pytest.fixture
def log(campaign):
    """Round 1: public narrative, Thorin's whisper, a GM note; round 2: Cassia's action."""
    make_turn(campaign, round=1, content="The door opens.")
    make_turn(
        campaign,
        round=1,
        speaker="Thorin",
        kind="whisper",
        content="Thorin whispers.",
        visibility=["Thorin", "DM"],
    )
    make_turn(campaign, round=1, kind="gm_note", content="A trap.", visibility=["DM"])
    make_turn(campaign, round=2, speaker="Cassia", kind="action", content="Cassia reads.")
    return campaign


def test_the_owner_reads_every_turn_in_seq_order(api, log, owner):
    response = api(owner).get(url(log))
    assert _contents(response) == [
        "The door opens.",
        "Thorin whispers.",
        "A trap.",
        "Cassia reads.",
    ]
    assert [t["seq"] for t in response.json()["results"]] == [1, 2, 3, 4]


def test_as_role_shows_that_roles_view(api, log, owner):
    assert _contents(api(owner).get(url(log), {"as": "Cassia"})) == [
        "The door opens.",
        "Cassia reads.",
    ]
    assert "A trap." in _contents(api(owner).get(url(log), {"as": "DM"}))


def test_a_player_is_forced_to_their_own_view_whatever_as_says(api, log, player):
    own = ["The door opens.", "Thorin whispers.", "Cassia reads."]
    assert _contents(api(player).get(url(log))) == own
    for other in ("DM", "Cassia", "Nobody"):
        assert _contents(api(player).get(url(log), {"as": other})) == own


def test_round_and_kind_filter(api, log, owner):
    assert _contents(api(owner).get(url(log), {"round": 2})) == ["Cassia reads."]
    assert _contents(api(owner).get(url(log), {"kind": "gm_note"})) == ["A trap."]
    assert _contents(api(owner).get(url(log), {"round": 1, "kind": "action"})) == []


@pytest.mark.parametrize(
    ("params", "field"),
    [({"round": -1}, "round"), ({"round": "two"}, "round"), ({"kind": "poem"}, "kind")],
)
def test_bad_filters_are_400_naming_the_parameter(api, log, owner, params, field):
    response = api(owner).get(url(log), params)
    assert response.status_code == 400
    assert field in response.json()


def test_the_list_is_paginated_in_seq_order(api, campaign, owner):
    for index in range(7):
        make_turn(campaign, content=f"Turn {index}")
    first = api(owner).get(url(campaign), {"page_size": 5}).json()
    second = api(owner).get(url(campaign), {"page_size": 5, "page": 2}).json()
    assert first["count"] == 7
    assert [t["seq"] for t in first["results"] + second["results"]] == list(range(1, 8))


def test_listing_does_not_grow_queries_with_the_page(
    api, campaign, owner, django_assert_max_num_queries
):
    for index in range(30):
        make_turn(campaign, content=f"Turn {index}")
    client = api(owner)
    with django_assert_max_num_queries(8):
        assert client.get(url(campaign)).status_code == 200


def test_the_owner_posts_a_turn_with_the_next_seq_and_a_token_count(api, log, owner):
    body = {
        "round": 2,
        "speaker": "DM",
        "kind": "whisper",
        "content": "The DM answers Thorin.",
        "visibility": ["DM", "Thorin"],
        "tags": ["npc:Vane", "thread:door"],
        "hinge": True,
    }
    response = api(owner).post(url(log), body, format="json")
    assert response.status_code == 201, response.json()
    stored = Turn.objects.get(pk=response.json()["id"])
    assert stored.seq == 5
    assert (stored.round, stored.speaker, stored.kind, stored.content) == (
        2,
        "DM",
        "whisper",
        "The DM answers Thorin.",
    )
    assert stored.visibility == ["DM", "Thorin"]
    assert stored.tags == ["npc:Vane", "thread:door"]
    assert stored.hinge is True
    assert stored.tokens > 0
    assert response.json()["seq"] == 5


def test_posted_turns_reach_exactly_their_audience(api, log, owner, player, other_player):
    body = {"round": 2, "speaker": "DM", "kind": "intel", "content": "For Cassia only."}
    body["visibility"] = ["Cassia", "DM"]
    assert api(owner).post(url(log), body, format="json").status_code == 201
    assert "For Cassia only." in _contents(api(other_player).get(url(log)))
    assert "For Cassia only." not in _contents(api(player).get(url(log)))


VALID = {"round": 1, "speaker": "DM", "kind": "narrative", "content": "Fine."}


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"visibility": ["Thorin", "Gandalf"]}, "visibility"),
        ({"visibility": "DM"}, "visibility"),
        ({"visibility": {"DM": True}}, "visibility"),
        ({"visibility": []}, "visibility"),
        ({"visibility": [3]}, "visibility"),
        ({"speaker": "Gandalf"}, "speaker"),
        ({"kind": "poem"}, "kind"),
        ({"round": -1}, "round"),
        ({"round": "soon"}, "round"),
        ({"round": 2**40}, "round"),
        ({"content": ""}, "content"),
        ({"content": "   "}, "content"),
        ({"content": "x\x00y"}, "content"),
        ({"tags": "npc:Vane"}, "tags"),
        ({"hinge": "maybe"}, "hinge"),
        ({"seq": 99}, "seq"),
        ({"needs_review": True}, "needs_review"),
        ({"visiblity": ["DM"]}, "visiblity"),
    ],
)
def test_bad_turns_are_400_naming_the_field_and_store_nothing(api, campaign, owner, changes, field):
    response = api(owner).post(url(campaign), {**VALID, **changes}, format="json")
    assert response.status_code == 400
    assert field in response.json(), response.json()
    assert Turn.objects.count() == 0


@pytest.mark.parametrize("missing", ["speaker", "kind", "content"])
def test_required_turn_fields(api, campaign, owner, missing):
    body = {key: value for key, value in VALID.items() if key != missing}
    response = api(owner).post(url(campaign), body, format="json")
    assert response.status_code == 400
    assert missing in response.json()
    assert Turn.objects.count() == 0


def test_a_turn_without_a_round_goes_into_the_open_round(api, campaign, owner):
    campaign.current_round = 3
    campaign.save(update_fields=["current_round"])
    body = {key: value for key, value in VALID.items() if key != "round"}
    response = api(owner).post(url(campaign), body, format="json")
    assert response.status_code == 201
    assert response.json()["round"] == 3
    campaign.refresh_from_db()
    assert campaign.current_round == 3


def test_the_owner_posting_into_a_later_round_opens_it(api, campaign, owner):
    response = api(owner).post(url(campaign), {**VALID, "round": 2}, format="json")
    assert response.status_code == 201
    campaign.refresh_from_db()
    assert campaign.current_round == 2


def test_content_over_the_default_limit_is_rejected_with_the_limit(api, campaign, owner, settings):
    settings.BABEL_MAX_CONTENT_CHARS = 100_000
    response = api(owner).post(url(campaign), {**VALID, "content": "x" * 100_001}, format="json")
    assert response.status_code == 400
    assert "100000" in response.json()["content"][0]
    assert Turn.objects.count() == 0
    ok = api(owner).post(url(campaign), {**VALID, "content": "x" * 100_000}, format="json")
    assert ok.status_code == 201


def test_the_content_limit_follows_the_experiment_config(api, owner):
    experiment = make_experiment(owner=owner, config={"max_content_chars": 10})
    response = api(owner).post(url(experiment), {**VALID, "content": "x" * 11}, format="json")
    assert response.status_code == 400
    assert "10" in response.json()["content"][0]
    assert not Turn.objects.exists()


def test_bad_json_is_400_and_stores_nothing(api, campaign, owner):
    response = api(owner).post(url(campaign), data='{"round": 1,', content_type="application/json")
    assert response.status_code == 400
    assert Turn.objects.count() == 0


def test_outsiders_cannot_read_or_post(api, log, stranger):
    assert api(stranger).get(url(log)).status_code == 404
    response = api(stranger).post(url(log), VALID, format="json")
    assert response.status_code == 404
    assert Turn.objects.count() == 4


def test_missing_experiment_is_404(api, owner):
    assert api(owner).get("/api/experiments/31337/turns/").status_code == 404


def test_wrong_method_is_405(api, log, owner):
    assert api(owner).put(url(log), VALID, format="json").status_code == 405
    assert api(owner).delete(url(log)).status_code == 405
    assert Turn.objects.count() == 4
