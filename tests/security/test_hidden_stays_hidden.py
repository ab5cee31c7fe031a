"""Issue 23, finding 5, one test per leak, from the player's side: what exists but is
hidden from Thorin must not show in any number, label, status or timing he can read.
(The property over random hidden additions is `test_noninterference.py`.)"""

from __future__ import annotations

import re

import pytest

from campaigns.models import Participant
from campaigns.services import pack_cache
from campaigns.services.memory import run_command
from tests.factories import make_turn

pytestmark = pytest.mark.django_db


def _gm_note(campaign, text="The floor is a trap.", round=1):
    return make_turn(
        campaign, round=round, speaker="DM", kind="gm_note", content=text, visibility=["DM"]
    )


@pytest.fixture
def table(campaign, player, other_player, django_capture_on_commit_callbacks):
    """Round 1: six public narrations, a GM note, a whisper between Cassia and the DM,
    Thorin's action, another GM note; then a /checkpoint after the last (hidden) note.
    Thorin reads seqs 1-6 and 9."""
    campaign.current_round = 1
    campaign.save(update_fields=["current_round"])
    for index in range(6):
        make_turn(campaign, content=f"The tide drops, hour {index}. " + "Water rises. " * 30)
    _gm_note(campaign)
    make_turn(
        campaign,
        speaker="Cassia",
        kind="whisper",
        content="I saw the vault key.",
        visibility=["Cassia", "DM"],
    )
    make_turn(campaign, speaker="Thorin", kind="action", content="I wade in.")
    _gm_note(campaign, "The key is false.")
    with django_capture_on_commit_callbacks(execute=True):
        run_command(experiment=campaign, command="checkpoint", user=campaign.owner)
    return campaign


def test_a_players_turn_numbers_are_positions_in_what_they_read(api, table, player):
    turns = api(player).get(f"/api/experiments/{table.pk}/turns/").json()["results"]
    # Stored as seqs 1-6 and 9: the gap would count the two turns hidden from him.
    assert [(t["id"], t["seq"]) for t in turns] == [(n, n) for n in range(1, 8)]
    page = api(player).get(f"/api/experiments/{table.pk}/turns/", {"kind": "action"}).json()
    assert [t["seq"] for t in page["results"]] == [7]


def test_the_console_numbers_a_players_turns_and_pages_back_by_them(as_user, table, player):
    html = as_user(player).get(f"/campaigns/{table.pk}/").content.decode()
    assert re.findall(r'<span class="seq">#(\d+)</span>', html) == [str(n) for n in range(1, 8)]
    earlier = as_user(player).get(f"/campaigns/{table.pk}/", {"before": 7}).content.decode()
    assert re.findall(r'<span class="seq">#(\d+)</span>', earlier) == [str(n) for n in range(1, 7)]


def test_a_players_trim_log_never_names_a_hidden_turn(api, table, player):
    """The /checkpoint ran after a hidden GM note (seq 10): its seq was in every reason."""
    body = api(player).get(f"/api/experiments/{table.pk}/context/Thorin/", {"debug": "true"})
    pack = body.json()
    reasons = " ".join(event["reason"] for event in pack["trim_log"])
    assert "checkpoint" in reasons and not re.search(r"\d", reasons)
    refs = [event["ref"] for event in pack["trim_log"]]
    refs += [item["ref"] for section in pack["sections"] for item in section["items"]]
    assert refs and all(re.fullmatch(r"turn:#[1-7]", ref) for ref in refs if "turn" in ref)


def test_a_digest_is_labelled_with_the_player_alone(api, as_user, table, player):
    """Digests were shared by players who read the same turns: a whisper between others
    split "Thorin Wren" into "Thorin". Now each participant has their own digest."""
    summaries = api(player).get(f"/api/experiments/{table.pk}/summaries/").json()["results"]
    assert [(s["kind"], s["audience"]) for s in summaries] == [("digest", ["Thorin"])]
    assert summaries[0]["covered_seq"] == 7  # his seventh turn, not the hidden note's seq
    html = as_user(player).get(f"/campaigns/{table.pk}/memory/").content.decode()
    label = re.search(r"Digest for (.*?)</h3>", html, re.S)[1]
    assert re.findall(r'<span class="chip">(\w+)</span>', label) == ["Thorin"]


def test_another_participants_reveal_round_is_hidden_until_it_opens(api, table, player):
    Participant.objects.filter(experiment=table, role="Cassia").update(
        secret="Drown the archive.", reveal_round=3
    )
    rows = api(player).get(f"/api/experiments/{table.pk}/participants/").json()["results"]
    cassia = next(row for row in rows if row["role"] == "Cassia")
    assert (cassia["secret"], cassia["reveal_round"]) == (None, None)
    table.current_round = 4
    table.save(update_fields=["current_round"])
    rows = api(player).get(f"/api/experiments/{table.pk}/participants/").json()["results"]
    cassia = next(row for row in rows if row["role"] == "Cassia")
    assert (cassia["secret"], cassia["reveal_round"]) == ("Drown the archive.", 3)


def test_a_hidden_write_does_not_rebuild_a_players_pack(api, table, player):
    url = f"/api/experiments/{table.pk}/context/Thorin/"
    first = api(player).get(url).json()
    misses = pack_cache.stats["misses"]
    _gm_note(table, "Another secret the players never read.")
    make_turn(table, speaker="Cassia", kind="monologue", content="Hm.", visibility=["Cassia"])
    assert api(player).get(url).json() == first
    assert pack_cache.stats["misses"] == misses  # served, not rebuilt
    make_turn(table, speaker="Cassia", kind="action", content="I follow.")
    api(player).get(url)
    assert pack_cache.stats["misses"] == misses + 1  # what he reads changed: rebuilt


def test_hidden_notes_using_a_word_never_hide_a_players_own_turn_from_search(api, campaign, player):
    """PostgreSQL took the newest 500 matches before visibility: 510 GM notes using a word
    pushed Thorin's own public turn out of his /search (SQLite too is checked)."""
    campaign.current_round = 1
    campaign.save(update_fields=["current_round"])
    make_turn(campaign, speaker="Thorin", kind="action", content="I hide the lantern-moss.")
    for index in range(510):
        _gm_note(campaign, f"Note {index}: the lantern-moss is poisoned.")
    response = api(player).post(
        f"/api/experiments/{campaign.pk}/commands/",
        {"command": "search", "query": "lantern-moss"},
        format="json",
    )
    assert response.status_code == 200, response.json()
    found = response.json()["turns"]
    assert [(t["speaker"], t["text"]) for t in found] == [("Thorin", "I hide the lantern-moss.")]
