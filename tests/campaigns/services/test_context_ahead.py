"""Round trip 2 sent ahead (`context_ahead.ahead`, PostgreSQL): a role's next pack reads in
one round trip what took two, and is the pack it would be without — also when the round
moves on, and when the role now reads otherwise (what was sent ahead is then dropped).

The caches keep entries only from reads outside a transaction, so these tests commit.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from campaigns.models import Experiment, Participant
from campaigns.reads import hit_cache, postings_cache, window_cache
from campaigns.services import context_ahead
from campaigns.services.context import pack_for_role
from context_engine.ranking import as_postings
from context_engine.render import pack_to_json
from tests.factories import make_experiment, make_turn

pytestmark = pytest.mark.django_db(transaction=True)

INPUT = "Where is the brinewick oil?"


@pytest.fixture(autouse=True)
def _empty_caches():
    def clear():
        context_ahead.clear_ahead()
        window_cache.clear()
        postings_cache.clear()
        hit_cache.clear()

    clear()
    yield
    clear()


@pytest.fixture
def campaign(owner):
    experiment = make_experiment(owner=owner, roles=("DM", "Thorin", "Cassia"))
    for round_ in (1, 2):
        make_turn(experiment, round=round_, content=f"Round {round_}: brinewick oil spills.")
        make_turn(experiment, round=round_, kind="gm_note", content=f"gmnote-{round_} traitor")
        make_turn(
            experiment,
            round=round_,
            speaker="Cassia",
            kind="whisper",
            content=f"whisper-Cassia-{round_} brinewick",
            visibility=["Cassia", "DM"],
        )
    return experiment


def _pack(experiment, role: str) -> tuple[str, int]:
    """The role's pack (built, not from the pack cache) and its statements, but the
    hits' rows: those are skipped when the window holds the hits (a player's, not a
    judge's: `hit_cache.window_hit_rows`), whatever was sent ahead."""
    with CaptureQueriesContext(connection) as captured:
        pack = pack_for_role(experiment=experiment, role=role, input_text=INPUT, use_cache=False)
    statements = [q["sql"] for q in captured.captured_queries]
    return pack_to_json(pack), sum("hits AS MATERIALIZED" not in sql for sql in statements)


def _without_ahead(experiment, role: str) -> str:
    """The same pack with nothing sent ahead (the role's last inputs forgotten)."""
    kept = dict(context_ahead._last_packs)
    context_ahead.clear_ahead()
    try:
        return _pack(experiment, role)[0]
    finally:
        context_ahead._last_packs.update(kept)


def _one_fewer_on_postgresql(first: int, then: int) -> None:
    assert then == (first - 1 if connection.vendor == "postgresql" else first)


def test_a_roles_next_pack_after_a_new_turn_takes_one_round_trip_fewer(campaign):
    _, first = _pack(campaign, "Thorin")
    make_turn(campaign, round=2, speaker="Thorin", kind="action", content="Thorin wipes the oil.")
    pack, then = _pack(campaign, "Thorin")
    _one_fewer_on_postgresql(first, then)
    assert "Thorin wipes the oil." in pack
    assert pack == _without_ahead(campaign, "Thorin")


def test_a_new_round_still_takes_one_round_trip_fewer_and_reads_the_same(campaign):
    _, first = _pack(campaign, "Cassia")
    Experiment.objects.filter(pk=campaign.pk).update(current_round=5)
    make_turn(campaign, round=5, content="Round 5: the brinewick oil burns.")
    pack, then = _pack(campaign, "Cassia")
    _one_fewer_on_postgresql(first, then)
    assert "Round 5: the brinewick oil burns." in pack
    assert pack == _without_ahead(campaign, "Cassia")


def test_a_role_that_now_reads_less_gets_nothing_sent_ahead_for_what_it_read(campaign):
    Participant.objects.filter(experiment=campaign, role="Thorin").update(kind="judge")
    judge_pack, first = _pack(campaign, "Thorin")
    assert "gmnote-2" in judge_pack and "whisper-Cassia-2" in judge_pack
    # The judge's seat becomes a player's: what the judge's last pack read must not reach it.
    Participant.objects.filter(experiment=campaign, role="Thorin").update(kind="player")
    pack, then = _pack(campaign, "Thorin")
    assert then == first  # round trip 2 ran again
    assert "gmnote-" not in pack and "whisper-Cassia" not in pack
    assert pack == _without_ahead(campaign, "Thorin")


def test_a_role_that_now_reads_more_reads_it_in_its_next_pack(campaign):
    player_pack, first = _pack(campaign, "Thorin")
    assert "gmnote-" not in player_pack
    Participant.objects.filter(experiment=campaign, role="Thorin").update(kind="judge")
    pack, then = _pack(campaign, "Thorin")
    assert then == first
    assert "gmnote-2" in pack and "whisper-Cassia-2" in pack
    assert pack == _without_ahead(campaign, "Thorin")


def test_a_changed_window_or_many_appended_turns_read_as_without(campaign):
    _pack(campaign, "Cassia")
    Experiment.objects.filter(pk=campaign.pk).update(
        config={"strategy": "layered", "hot_window_rounds": 1}
    )
    make_turn(campaign, round=2, content="A narrow window.")
    assert _pack(campaign, "Cassia")[0] == _without_ahead(campaign, "Cassia")
    # More turns than the appended read reaches: the window is read in full, as without.
    for n in range(window_cache.MAX_APPENDED + 4):
        make_turn(campaign, round=2, speaker="Thorin", kind="action", content=f"step {n}")
    pack, _ = _pack(campaign, "Cassia")
    assert f"step {window_cache.MAX_APPENDED + 3}" in pack
    assert pack == _without_ahead(campaign, "Cassia")


def _standalone_postings_reads(experiment, role: str) -> tuple[str, int]:
    """The role's pack, and how many statements read postings on their own."""
    with CaptureQueriesContext(connection) as captured:
        pack = pack_for_role(experiment=experiment, role=role, input_text=INPUT, use_cache=False)
    alone = [  # PostgreSQL's statement, SQLite's
        q["sql"]
        for q in captured.captured_queries
        if q["sql"].startswith(('SELECT "w"', "SELECT 0 AS word"))
    ]
    return pack_to_json(pack), len(alone)


def test_a_new_turn_with_no_new_query_word_reads_its_postings_with_round_trip_1(campaign):
    """The held words' new matches come with the first round trip (`context_ahead.Held`): a
    turn that brings no word the last query lacked costs no postings statement; one that
    does costs one, for its new words only. Either pack is the pack built without."""
    _pack(campaign, "Thorin")
    make_turn(campaign, round=2, content="Brinewick oil.")
    pack, alone = _standalone_postings_reads(campaign, "Thorin")
    assert alone == (0 if connection.vendor == "postgresql" else 1)
    assert "Brinewick oil." in pack
    assert pack == _without_ahead(campaign, "Thorin")
    make_turn(campaign, round=2, content="Saltmarsh lanterns gutter.")
    pack, alone = _standalone_postings_reads(campaign, "Thorin")
    assert alone == 1
    assert pack == _without_ahead(campaign, "Thorin")


def test_held_postings_cover_a_word_only_from_the_seq_they_were_read_past():
    """A word's postings read past seq 10 answer a read past 10 or later (the cache's
    entry may have moved on since they were sent): only the matches past it; a read
    past an earlier seq, or a word not sent, is left to the database."""
    held = {
        "oil": (10, as_postings([(7, 15, 3, 0), (6, 12, 3, 1), (5, 11, 3, 0)])),
        "salt": (10, as_postings([])),
    }
    found, words, since = context_ahead.covered_by_held(held, ["oil", "salt", "gate"], [10, 4, 10])
    assert {word: rows.tolist() for word, rows in found.items()} == {
        "oil": [[7, 15, 3, 0], [6, 12, 3, 1], [5, 11, 3, 0]]
    }
    assert (words, since) == (["salt", "gate"], [4, 10])
    found, _, _ = context_ahead.covered_by_held(held, ["oil"], [12])
    assert {word: rows.tolist() for word, rows in found.items()} == {"oil": [[7, 15, 3, 0]]}
