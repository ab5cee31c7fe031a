"""The timeline's Edit and Regenerate (issue 24 ask 4) over the permission matrix: the DM
side (owner, staff, a user seated as the DM) edits in place and sees earlier texts; a
player, a stranger and anonymous change nothing; view-as-player shows no fix buttons."""

from __future__ import annotations

import pytest

from campaigns.models import Job, Turn, TurnRevision
from campaigns.services.relay import round_start
from campaigns.services.turn_fixes import turn_edit
from tests.campaigns.console.conftest import HX, is_login_redirect
from tests.factories import make_turn, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def co_dm(exp):
    user = make_user("co_dm")
    exp.participants.filter(role="DM").update(user=user)
    return user


@pytest.fixture
def people(personas, co_dm):
    return {**personas, "co_dm": co_dm}


def public(exp):
    return Turn.objects.get(experiment=exp, kind="narrative")


def snapshot(exp):
    return (
        list(Turn.objects.filter(experiment=exp).values_list("pk", "content")),
        TurnRevision.objects.count(),
        Job.objects.filter(kind="regenerate").count(),
    )


def fix_url(exp, tid, tail=""):
    return f"/campaigns/{exp.pk}/turns/{tid}/{tail}"


@pytest.mark.parametrize(
    ("who", "status"),
    [
        ("owner", 200),
        ("staff", 200),
        ("co_dm", 200),
        ("player", 403),
        ("stranger", 404),
        ("anonymous", "login"),
    ],
)
def test_saving_an_edit_over_the_matrix(as_user, people, exp, who, status):
    turn = public(exp)
    tid = 1 if who in ("co_dm", "player") else turn.pk  # a seat knows turns by position
    before = snapshot(exp)
    client = as_user(people[who])
    form = client.get(fix_url(exp, tid, "edit/"), **HX)
    response = client.post(fix_url(exp, tid), {"content": "The tide turns red."}, **HX)
    if status == "login":
        assert is_login_redirect(form) and is_login_redirect(response)
    else:
        assert (form.status_code, response.status_code) == (status, status)
    if status == 200:
        assert 'name="content"' in form.content.decode()
        body = response.content.decode()
        assert "The tide turns red." in body and "edited 1×" in body
        assert TurnRevision.objects.get(turn=turn).user == people[who]
    else:
        assert snapshot(exp) == before


def test_an_empty_edit_re_renders_the_form_with_the_error_and_stores_nothing(as_user, owner, exp):
    turn = public(exp)
    before = snapshot(exp)
    response = as_user(owner).post(fix_url(exp, turn.pk), {"content": "  "}, **HX)
    assert response.status_code == 422
    body = response.content.decode()
    assert 'name="content"' in body and 'role="alert"' in body
    assert snapshot(exp) == before


def test_the_timeline_shows_fix_buttons_to_the_dm_side_only(as_user, owner, player, exp):
    turn = public(exp)
    owner_page = as_user(owner).get(f"/campaigns/{exp.pk}/").content.decode()
    assert fix_url(exp, turn.pk, "edit/") in owner_page
    as_thorin = as_user(owner).get(f"/campaigns/{exp.pk}/?as=Thorin").content.decode()
    player_page = as_user(player).get(f"/campaigns/{exp.pk}/").content.decode()
    for page in (as_thorin, player_page):
        assert "/edit/" not in page and "Regenerate" not in page


def test_earlier_texts_show_under_the_row_for_who_read_them(as_user, owner, player, exp):
    turn = public(exp)
    turn_edit(turn=turn, user=owner, content="The archive floods at dawn.")
    for user in (owner, player):
        page = as_user(user).get(f"/campaigns/{exp.pk}/").content.decode()
        assert "The archive floods at dawn." in page
        assert "Earlier text (1)" in page


def test_regenerate_from_the_timeline_follows_its_job(
    as_user, owner, player, exp, django_capture_on_commit_callbacks
):
    exp.participants.update(model="offline")
    by_person = public(exp)
    with django_capture_on_commit_callbacks(execute=True):
        round_start(experiment=exp, user=owner)
    turn = Turn.objects.filter(experiment=exp, speaker="Thorin", kind="action").first()
    page = as_user(owner).get(f"/campaigns/{exp.pk}/").content.decode()
    assert fix_url(exp, turn.pk, "regenerate/") in page
    # A turn no model wrote has no Regenerate button.
    assert fix_url(exp, by_person.pk, "regenerate/") not in page

    before = snapshot(exp)
    refused = as_user(player).post(fix_url(exp, 1, "regenerate/"), **HX)
    assert refused.status_code in (403, 404)
    assert snapshot(exp) == before

    with django_capture_on_commit_callbacks(execute=True):
        response = as_user(owner).post(fix_url(exp, turn.pk, "regenerate/"), **HX)
    assert response.status_code == 200
    job = Job.objects.get(kind="regenerate")
    polled = as_user(owner).get(fix_url(exp, turn.pk) + f"?job={job.pk}", **HX)
    assert polled.status_code == 200
    assert "Succeeded" in polled.content.decode()
    assert "turns-changed" in polled["HX-Trigger"]


@pytest.mark.django_db(transaction=True)
def test_a_regeneration_that_ended_before_the_answer_refreshes_the_timeline(as_user, owner, exp):
    """Without a broker the Job runs on commit, inside the request: the step's other turns
    took new text too, so the answer tells the timeline to refresh, as a poll would."""
    exp.participants.update(model="offline")
    round_start(experiment=exp, user=owner)
    turn = Turn.objects.filter(experiment=exp, speaker="Thorin", kind="action").first()
    response = as_user(owner).post(fix_url(exp, turn.pk, "regenerate/"), **HX)
    assert response.status_code == 200
    assert Job.objects.get(kind="regenerate").status == "succeeded"
    assert "Succeeded" in response.content.decode()
    assert "turns-changed" in response["HX-Trigger"]


def test_regenerating_a_person_s_turn_says_why_on_the_row(as_user, owner, exp):
    turn = make_turn(exp, content="The owner's own narration.")
    response = as_user(owner).post(fix_url(exp, turn.pk, "regenerate/"), **HX)
    assert response.status_code == 422
    assert "Only a turn a model wrote" in response.content.decode()
    assert not Job.objects.filter(kind="regenerate").exists()
