"""What a linked player may post: only as their role, only turns they could read."""

from __future__ import annotations

import pytest

from campaigns.models import Turn

pytestmark = pytest.mark.django_db


def url(experiment) -> str:
    return f"/api/experiments/{experiment.pk}/turns/"


@pytest.fixture(autouse=True)
def _round_one_is_open(campaign):
    """The DM side opened round 1; players post into the open round."""
    campaign.current_round = 1
    campaign.save(update_fields=["current_round"])


@pytest.mark.parametrize(
    ("kind", "visibility"),
    [
        ("action", None),
        ("action", ["Thorin", "Cassia"]),
        ("whisper", ["Thorin", "DM"]),
        ("whisper", ["Thorin", "Cassia"]),
        ("monologue", ["Thorin"]),
    ],
)
def test_a_player_posts_as_their_role(api, campaign, player, kind, visibility):
    body = {"round": 1, "speaker": "Thorin", "kind": kind, "content": "I act."}
    body["visibility"] = visibility
    response = api(player).post(url(campaign), body, format="json")
    assert response.status_code == 201, response.json()
    stored = Turn.objects.get()
    assert (stored.speaker, stored.kind) == ("Thorin", kind)
    assert stored.visibility == (sorted(visibility) if visibility else None)


@pytest.mark.parametrize(
    ("changes", "status", "field"),
    [
        ({"speaker": "Cassia"}, 403, "speaker"),
        ({"speaker": "DM"}, 403, "speaker"),
        ({"kind": "gm_note", "visibility": ["DM"]}, 403, "kind"),
        ({"kind": "gm_note", "visibility": ["DM", "Thorin"]}, 403, "kind"),
        ({"kind": "narrative"}, 403, "kind"),
        ({"kind": "system"}, 403, "kind"),
        ({"kind": "intel", "visibility": ["Cassia", "Thorin"]}, 403, "kind"),
        ({"kind": "action", "visibility": ["DM"]}, 400, "visibility"),
        ({"kind": "whisper", "visibility": ["Cassia", "DM"]}, 400, "visibility"),
        ({"kind": "whisper", "visibility": None}, 400, "visibility"),
        ({"kind": "whisper", "visibility": ["Thorin"]}, 400, "visibility"),
        ({"kind": "monologue", "visibility": None}, 400, "visibility"),
        ({"kind": "monologue", "visibility": ["Thorin", "DM"]}, 400, "visibility"),
        ({"kind": "action", "visibility": ["Thorin", "Ghost"]}, 400, "visibility"),
        ({"kind": "action", "visibility": []}, 400, "visibility"),
    ],
)
def test_a_player_cannot_post_for_others_or_hide_text_from_themselves(
    api, campaign, player, changes, status, field
):
    body = {"round": 1, "speaker": "Thorin", "kind": "action", "content": "Sneaky."}
    response = api(player).post(url(campaign), {**body, **changes}, format="json")
    assert response.status_code == status, response.json()
    assert field in response.json()
    assert Turn.objects.count() == 0


def test_a_linked_dm_may_write_gm_notes_as_the_dm(api, campaign):
    from tests.factories import make_user

    human_dm = make_user("human_dm")
    campaign.participants.filter(role="DM").update(user=human_dm)
    body = {
        "round": 1,
        "speaker": "DM",
        "kind": "gm_note",
        "content": "Trap.",
        "visibility": ["DM"],
    }
    response = api(human_dm).post(url(campaign), body, format="json")
    assert response.status_code == 201
    assert Turn.objects.get().kind == "gm_note"
    # …but still only as the DM, and never something the DM could not read.
    cassia_only = {**body, "kind": "intel", "visibility": ["Cassia"]}
    assert api(human_dm).post(url(campaign), cassia_only, format="json").status_code == 400
    as_thorin = {**body, "speaker": "Thorin", "kind": "action", "visibility": None}
    assert api(human_dm).post(url(campaign), as_thorin, format="json").status_code == 403
    assert Turn.objects.count() == 1


def test_a_judge_reads_everything_but_posts_nothing(api, secrets_campaign, judge):
    experiment = secrets_campaign.experiment
    before = Turn.objects.count()
    listed = api(judge).get(url(experiment)).json()
    assert listed["count"] == before
    body = {"round": 1, "speaker": "Judge", "kind": "action", "content": "Verdict."}
    assert api(judge).post(url(experiment), body, format="json").status_code == 403
    assert Turn.objects.count() == before
