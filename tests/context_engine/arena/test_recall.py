"""Evidence recall and its floors on a campaign small enough to count by hand.

Round 1: a long public narration about the ferry's price (t1), Thorin's whisper to the DM
(t2). Round 2: Cassia waits (t3). Round 3: rain (t4). Questions: the price (public, asked
at round 3 of every non-judge role), the sigil (a whisper: only the DM and Thorin can
read its evidence, asked at round 1), and the sigil asked of Cassia alone (she reads no
evidence: never scored).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from context_engine.arena import ArenaOptions, History, Replay, recommend, run_arena
from context_engine.arena.floors import Bm25Floor, fill, recency_floor
from context_engine.arena.recall import (
    QuestionView,
    asks_for,
    found,
    normalise,
    pack_search_text,
    score_questions,
)
from context_engine.arena.replay import scaled_config
from context_engine.lines import turn_entry
from context_engine.types import Pack, PackConfig, ParticipantView, Section, TurnView

PARTICIPANTS = (
    ParticipantView("DM", "dm", bio="The game master."),
    ParticipantView("Thorin", "player", bio="A dwarf."),
    ParticipantView("Cassia", "player", bio="A scout."),
    ParticipantView("Judge", "judge", bio="Reads everything."),
)
PRICE = (
    "The ferry costs three moonmarks, paid at the toll house beside the long grey pier "
    "before dawn, and the ferryman counts every coin twice."
)
TURNS = (
    TurnView(1, 1, 1, "DM", "narrative", PRICE),
    TurnView(2, 2, 1, "Thorin", "whisper", "I keep the glassfang sigil.", ("DM", "Thorin")),
    TurnView(3, 3, 2, "Cassia", "action", "Cassia waits by the door."),
    TurnView(4, 4, 3, "DM", "narrative", "Rain falls on the pier."),
)
PRICE_Q = QuestionView("What does the ferry cost?", "three moonmarks", (1,), "single", 3)
SIGIL_Q = QuestionView("Who keeps the glassfang sigil?", "Thorin", (2,), "secret", 1)
CASSIA_Q = replace(SIGIL_Q, role="Cassia")
QUESTIONS = (PRICE_Q, SIGIL_Q, CASSIA_Q)


def cost(turn_id: int) -> int:
    return turn_entry(TURNS[turn_id - 1]).cost


@pytest.fixture
def replay() -> Replay:
    replay = Replay(History(participants=PARTICIPANTS, turns=TURNS, config=PackConfig()))
    replay.prepare([1, 3])
    return replay


def test_each_question_is_asked_of_the_roles_that_can_read_its_evidence(replay):
    pairs = [(a.question.question, a.role) for a in asks_for(replay, QUESTIONS)]
    # Judges are asked only when named; Cassia reads no evidence of the sigil: no pair.
    assert pairs == [
        (PRICE_Q.question, "DM"),
        (PRICE_Q.question, "Thorin"),
        (PRICE_Q.question, "Cassia"),
        (SIGIL_Q.question, "DM"),
        (SIGIL_Q.question, "Thorin"),
    ]
    assert asks_for(replay, QUESTIONS, roles=("Cassia",))[0].role == "Cassia"
    assert len(asks_for(replay, QUESTIONS, roles=("Cassia",))) == 1


def test_evidence_after_the_round_asked_is_not_owed(replay):
    early = replace(PRICE_Q, evidence=(1, 4), asked_at_round=2)
    assert [[t.id for t in a.evidence] for a in asks_for(replay, [early])] == [[1]] * 3


def test_floors_keep_what_fits_by_their_own_order_and_never_an_unreadable_turn(replay):
    budget = cost(1) + 1  # the long price line fits alone, with room for nothing else
    cassia = replay.readable_turns("Cassia", 3)
    assert [t.id for t in cassia] == [1, 3, 4]
    # Recency: the rain and Cassia's wait fit; then the price no longer does.
    assert recency_floor(cassia, budget).turn_ids == (3, 4)
    # BM25: only the price shares a word with the question; it fits.
    ranked = Bm25Floor(cassia).ranked(PRICE_Q.question)
    assert [t.id for t in ranked] == [1]
    assert fill(ranked, budget).turn_ids == (1,)
    huge = recency_floor(cassia, 10**6)
    assert "glassfang" not in huge.text and huge.turn_ids == (1, 3, 4)
    assert huge.text.splitlines()[0] == turn_entry(TURNS[0]).line


def test_recall_is_averaged_over_pairs_and_by_category_by_the_hand_count(replay):
    budget = cost(1) + 1
    configs = [
        ("full_history", budget, scaled_config(PackConfig(), strategy="full_history", total=budget))
    ]
    _, floors = score_questions(replay, asks_for(replay, QUESTIONS), configs)
    recency = floors[("recency", budget)].as_dict()
    bm25 = floors[("bm25", budget)].as_dict()
    # Recency: the price is older than what fits for all three askers (0, 0, 0); at round
    # 1 the whisper is the newest turn the DM and Thorin read (1, 1): 2 of 5 pairs.
    assert recency["evidence_recall"] == 0.4
    assert recency["evidence_by_category"] == {"secret": 1.0, "single": 0.0}
    # BM25 ranks each question's evidence first, and it fits: every pair.
    assert bm25["evidence_recall"] == 1.0
    assert bm25["evidence_pairs"] == recency["evidence_pairs"] == 5
    assert 0 < recency["evidence_tokens"] <= budget


def test_a_pack_counts_a_turn_only_outside_its_input_section():
    text = "The ferry costs three moonmarks."
    pack = Pack(
        role="DM",
        strategy="layered",
        budget=100,
        sections=(
            Section("recent", 50, 10, "[R1] DM (narrative): Rain falls\n  on the pier."),
            Section("input", 50, 10, text),
        ),
        trim_log=(),
        total_tokens=20,
        untrimmed_tokens=20,
        pressure=0.2,
        strain="normal",
    )
    searched = pack_search_text(pack)
    evidence = [replace(TURNS[0], content=text), TURNS[3]]
    # The rain's line wraps in the pack: whitespace is normalised on both sides.
    assert found(searched, evidence) == 1
    assert normalise(" a \n b ") == "a b"


def test_a_multi_line_turn_counts_as_the_pack_writes_it_with_its_continuation_marks():
    photo = replace(TURNS[2], content="I got it!\n [shares a photo: a degree certificate]")
    line = turn_entry(photo).line
    assert "\n  | " in line  # framed: the turn's second line is marked as its own
    assert found(normalise(line), [photo]) == 1
    # Its first line alone is not the turn.
    assert found(normalise("[R2] Cassia (action): I got it!"), [photo]) == 0


def test_the_arena_reports_recall_with_both_floors_at_every_budget():
    history = History(participants=PARTICIPANTS, turns=TURNS, config=PackConfig())
    options = ArenaOptions(strategies=("full_history",), budgets=(4000, 13000), every=3)
    report, _ = run_arena(Replay(history), (), options, questions=QUESTIONS)
    full = {r["budget"]: r for r in report["results"]}
    # The whole readable history fits: every readable evidence turn is in every pack.
    assert full[13000]["evidence_recall"] == 1.0
    assert full[13000]["evidence_pairs"] == 5
    assert [(f["strategy"], f["budget"]) for f in report["floors"]] == [
        ("recency", 4000),
        ("recency", 13000),
        ("bm25", 4000),
        ("bm25", 13000),
    ]
    assert report["questions"] == {"questions": 3, "pairs": 5}


def _row(strategy, budget, recall, retention=1.0, leaks=0):
    return {
        "strategy": strategy,
        "budget": budget,
        "evidence_recall": recall,
        "retention": retention,
        "mean_tokens": 100.0,
        "leaks": leaks,
    }


def test_the_recommendation_is_never_below_the_bm25_floor_at_its_budget():
    floors = [_row("bm25", 2000, 0.6), _row("bm25", 4000, 0.95), _row("recency", 2000, 0.1)]
    results = [
        _row("layered", 2000, 0.7, retention=0.5),
        _row("tiered", 2000, 0.5, retention=1.0),  # best retention, below bm25
        _row("layered", 4000, 0.9, retention=1.0),  # more recall, below bm25 at 4000
    ]
    assert recommend(results, floors) == {"strategy": "layered", "budget": 2000}
    assert recommend(results[1:], floors) is None
    # Without questions (no floors) retention decides, as before.
    plain = [{**r, "evidence_recall": None} for r in results]
    assert recommend(plain) == {"strategy": "layered", "budget": 4000}
