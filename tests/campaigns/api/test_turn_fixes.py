"""`PATCH /api/experiments/{id}/turns/{tid}/` and `POST …/turns/{tid}/regenerate/` over
the permission matrix (owner, staff, a user seated as the DM, the player, a stranger,
anonymous): the DM side edits and regenerates, a refused write stores nothing, a player
gets 404 for a turn they do not read (the same answer as for no turn at all)."""

from __future__ import annotations

import pytest

from campaigns.models import Job, Turn, TurnRevision
from campaigns.services.relay import round_start
from tests.factories import make_turn, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def co_dm(campaign):
    user = make_user("co_dm")
    campaign.participants.filter(role="DM").update(user=user)
    return user


@pytest.fixture
def people(owner, staff_user, co_dm, player, stranger):
    return {
        "owner": owner,
        "staff": staff_user,
        "co_dm": co_dm,
        "player": player,
        "stranger": stranger,
        "anonymous": None,
    }


def url(experiment, tid, tail=""):
    return f"/api/experiments/{experiment.pk}/turns/{tid}/{tail}"


def shown_id(api, user, experiment, turn) -> int:
    """The id ``user`` was shown for ``turn`` in the turn list (positions for a seat)."""
    rows = api(user).get(f"/api/experiments/{experiment.pk}/turns/").json()["results"]
    (row,) = [r for r in rows if r["content"] == turn.content]
    return row["id"]


def snapshot(experiment):
    return (
        list(Turn.objects.filter(experiment=experiment).values_list("pk", "content")),
        TurnRevision.objects.count(),
        Job.objects.filter(kind="regenerate").count(),
    )


@pytest.mark.parametrize(
    ("who", "status"),
    [
        ("owner", 200),
        ("staff", 200),
        ("co_dm", 200),
        ("player", 403),
        ("stranger", 404),
        ("anonymous", 401),
    ],
)
def test_editing_a_public_turn_over_the_matrix(api, campaign, people, who, status):
    turn = make_turn(campaign, content="The tide turns.")
    user = people[who]
    tid = shown_id(api, user, campaign, turn) if who in ("co_dm", "player") else turn.pk
    before = snapshot(campaign)
    response = api(user).patch(
        url(campaign, tid), {"content": "The tide turns red."}, format="json"
    )
    assert response.status_code == status, response.content
    if status == 200:
        assert response.json()["content"] == "The tide turns red."
        assert response.json()["id"] == tid
        assert TurnRevision.objects.get(turn=turn).old_content == "The tide turns."
    else:
        assert snapshot(campaign) == before


def test_a_player_gets_the_same_404_for_a_hidden_turn_as_for_no_turn(api, campaign, player):
    make_turn(campaign, content="Public.")
    note = make_turn(campaign, kind="gm_note", content="Secret plan.", visibility=["DM"])
    before = snapshot(campaign)
    client = api(player)
    answers = []
    # The player's positions: 1 is the public turn (403: readable, not theirs to edit);
    # 2 would be the note if they read it — it does not exist for them, nor does 99.
    for tid in (2, 99, note.pk):
        for tail, body in (("", {"content": "x"}), ("regenerate/", {})):
            method = client.patch if not tail else client.post
            response = method(url(campaign, tid, tail), body, format="json")
            answers.append((response.status_code, response.json()))
    assert {status for status, _ in answers} == {404}
    assert len({str(body) for _, body in answers}) == 1
    assert client.patch(url(campaign, 1), {"content": "x"}, format="json").status_code == 403
    assert snapshot(campaign) == before


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"content": ""}, "content"),
        ({"content": "   "}, "content"),
        ({"content": 7}, "content"),
        ({}, "content"),
        ({"content": "x" * 100_001}, "content"),
        ({"content": "ok", "visibility": None}, "visibility"),
    ],
)
def test_a_bad_edit_is_a_400_naming_the_field(api, campaign, owner, body, field):
    turn = make_turn(campaign, content="The tide turns.")
    before = snapshot(campaign)
    response = api(owner).patch(url(campaign, turn.pk), body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json(), response.json()
    assert snapshot(campaign) == before


def test_regenerating_a_turn_no_model_wrote_is_a_400_on_turn(api, campaign, owner):
    turn = make_turn(campaign, content="The owner's own words.")
    before = snapshot(campaign)
    response = api(owner).post(url(campaign, turn.pk, "regenerate/"), {}, format="json")
    assert response.status_code == 400
    assert "turn" in response.json()
    assert snapshot(campaign) == before


@pytest.mark.parametrize(
    ("who", "status"),
    [("owner", 202), ("co_dm", 202), ("player", 403), ("stranger", 404), ("anonymous", 401)],
)
def test_regenerating_a_model_turn_over_the_matrix(
    api, campaign, owner, people, who, status, django_capture_on_commit_callbacks
):
    """The cast plays offline here (the stand-in model tests are the service's)."""
    campaign.participants.update(model="offline")
    with django_capture_on_commit_callbacks(execute=True):
        round_start(experiment=campaign, user=owner)
    turn = Turn.objects.filter(experiment=campaign, speaker="Thorin", kind="action").first()
    assert turn is not None
    user = people[who]
    tid = shown_id(api, user, campaign, turn) if who in ("co_dm", "player") else turn.pk
    before = snapshot(campaign)
    with django_capture_on_commit_callbacks(execute=True):
        response = api(user).post(url(campaign, tid, "regenerate/"), {}, format="json")
    assert response.status_code == status, response.content
    if status == 202:
        job = Job.objects.get(pk=response.json()["task_id"])
        assert (job.kind, job.status, job.result["role"]) == ("regenerate", "succeeded", "Thorin")
        polled = api(user).get(f"/api/tasks/{job.pk}/").json()
        assert polled["status"] == "succeeded"
    else:
        assert snapshot(campaign) == before


@pytest.mark.parametrize(
    ("who", "status"),
    [
        ("owner", 200),
        ("staff", 200),
        ("co_dm", 200),
        ("player", 200),
        ("stranger", 404),
        ("anonymous", 401),
    ],
)
def test_reading_one_turn_with_its_earlier_texts_over_the_matrix(
    api, campaign, owner, people, who, status
):
    from campaigns.services.turn_fixes import turn_edit

    turn = make_turn(campaign, content="The tide turns.")
    user = people[who]
    tid = shown_id(api, user, campaign, turn) if who in ("co_dm", "player") else turn.pk
    turn_edit(turn=turn, user=owner, content="The tide turns red.")
    response = api(user).get(url(campaign, tid))
    assert response.status_code == status
    if status == 200:
        body = response.json()
        assert (body["id"], body["content"]) == (tid, "The tide turns red.")
        assert [(r["old_content"], r["edited_by"]) for r in body["revisions"]] == [
            ("The tide turns.", "owner")
        ]


def test_one_turn_as_a_role_shows_only_that_role_s_earlier_texts(api, campaign, owner, player):
    from campaigns.services.turn_fixes import turn_edit

    whisper = make_turn(
        campaign, speaker="Cassia", kind="whisper", content="psst", visibility=["Cassia", "DM"]
    )
    turn_edit(turn=whisper, user=owner, content="psst!")
    assert api(owner).get(url(campaign, whisper.pk)).json()["revisions"][0]["old_content"] == "psst"
    as_thorin = api(owner).get(url(campaign, whisper.pk) + "?as=Thorin")
    assert as_thorin.status_code == 404
    # Thorin's own stream has no such turn: position 1 does not exist for him.
    assert api(player).get(url(campaign, 1)).status_code == 404
