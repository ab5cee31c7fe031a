import pytest
from django.urls import reverse

from campaigns.models import Turn
from tests.campaigns.console.conftest import ALLOWED, FORBIDDEN, HX, is_fragment
from tests.campaigns.console.matrix import READ, check_get

pytestmark = pytest.mark.django_db


def url(exp, name="console:whispers"):
    return reverse(name, args=[exp.pk])


@pytest.mark.parametrize("persona", READ)
def test_whisper_threads_over_the_permission_matrix(as_user, personas, exp, persona):
    check_get(as_user(personas[persona]), url(exp), READ[persona], marker='id="threads"')


def test_the_owner_sees_one_thread_per_audience_newest_first(as_user, owner, exp):
    body = as_user(owner).get(url(exp)).content.decode()
    assert body.count('class="thread panel"') == 2
    # Thorin's whisper is newer than Cassia's: his thread comes first.
    assert body.index(ALLOWED["thorin_whisper"]) < body.index(FORBIDDEN["cassia_whisper"])


def test_a_player_sees_only_their_own_threads(as_user, player, exp):
    body = as_user(player).get(url(exp)).content.decode()
    assert ALLOWED["thorin_whisper"] in body
    assert FORBIDDEN["cassia_whisper"] not in body and FORBIDDEN["dm_reply_to_cassia"] not in body


def test_a_player_whispers_and_the_dm_reads_it_in_its_thread(as_user, player, owner, exp):
    response = as_user(player).post(
        url(exp, "console:whisper_post"),
        {"recipients": ["DM"], "content": "Meet me at the well"},
        **HX,
    )
    assert response.status_code == 200 and is_fragment(response)
    turn = Turn.objects.get(content="Meet me at the well")
    assert (turn.speaker, turn.kind, turn.visibility) == ("Thorin", "whisper", ["DM", "Thorin"])
    assert "Meet me at the well" in as_user(owner).get(url(exp)).content.decode()


def test_a_player_cannot_whisper_as_someone_else(as_user, player, exp):
    before = Turn.objects.count()
    response = as_user(player).post(
        url(exp, "console:whisper_post"),
        {"recipients": ["DM"], "content": "forged", "speaker": "Cassia"},
    )
    assert response.status_code == 422
    assert "not one of the available choices" in response.content.decode()
    assert Turn.objects.count() == before


def test_the_owner_replies_into_a_thread_as_the_dm(as_user, owner, exp):
    response = as_user(owner).post(
        url(exp, "console:whisper_post"),
        {
            "thread": "Cassia-DM",
            "recipients": ["Cassia", "DM"],
            "content": "Noted.",
            "speaker": "DM",
        },
        **HX,
    )
    assert response.status_code == 200
    assert Turn.objects.get(content="Noted.").visibility == ["Cassia", "DM"]


def test_an_empty_reply_shows_the_error_in_its_thread_and_stores_nothing(as_user, owner, exp):
    before = Turn.objects.count()
    response = as_user(owner).post(
        url(exp, "console:whisper_post"),
        {"thread": "Cassia-DM", "recipients": ["Cassia", "DM"], "content": ""},
        **HX,
    )
    assert response.status_code == 422
    body = response.content.decode()
    thread = body.split('id="thread-Cassia-DM"')[1].split("</article>")[0]
    assert "This field is required" in thread
    assert Turn.objects.count() == before


@pytest.mark.parametrize("persona,status", [("stranger", 404), ("anonymous", 302)])
def test_outsiders_whisper_nothing(as_user, personas, exp, persona, status):
    before = Turn.objects.count()
    response = as_user(personas[persona]).post(
        url(exp, "console:whisper_post"), {"recipients": ["DM"], "content": "hi"}
    )
    assert response.status_code == status
    assert Turn.objects.count() == before


def test_a_players_new_whisper_has_the_dm_ticked_by_default(as_user, player, exp):
    body = as_user(player).get(url(exp)).content.decode()
    new = body.split('class="panel new-whisper"')[1].split("</form>")[0]
    assert 'value="DM"' in new and "checked" in new.split('value="DM"')[1].split(">")[0]
    assert "checked" not in new.split('value="Cassia"')[1].split(">")[0]
