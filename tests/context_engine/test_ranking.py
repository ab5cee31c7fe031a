"""BM25 over postings (`context_engine.ranking.rank_postings`): the order the retrieval
section, ``/search`` and the Arena's replay all take their hits in."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from context_engine.ranking import (
    CONTEXT_WEIGHT,
    DF_CAP,
    Posting,
    Query,
    QueryTerm,
    make_query,
    rank_postings,
)

WORDS = ("ashfern", "tonic", "brinewick", "oil", "leave")


@st.composite
def ranked_inputs(draw):
    """A query and its postings: few distinct turns and lengths, so scores tie often."""
    weights = st.sampled_from([1.0, 0.3, 0.1, 0.03]) | st.floats(0.001, 2.0)
    words = draw(st.lists(st.sampled_from(WORDS), unique=True, max_size=len(WORDS)))
    query = Query(tuple(QueryTerm(word, word, draw(weights)) for word in words))
    turns = draw(
        st.lists(
            st.tuples(st.integers(1, 60), st.integers(1, 12)),
            unique_by=lambda turn: turn[0],
            max_size=40,
        )
    )
    postings = {}
    for word in words:
        chosen = draw(st.lists(st.sampled_from(turns), unique=True)) if turns else []
        # A turn's seq is its id here: newest first, as the databases give them.
        postings[word] = [Posting(i, i, tokens) for i, tokens in sorted(chosen, reverse=True)]
    return query, postings


@settings(max_examples=400, deadline=None)
@given(ranked_inputs(), st.integers(0, 45))
def test_the_best_few_are_the_head_of_the_full_ranking(case, limit):
    query, postings = case
    full = rank_postings(query, postings)
    assert rank_postings(query, postings, limit) == full[:limit]


@settings(max_examples=200, deadline=None)
@given(ranked_inputs())
def test_the_full_ranking_is_best_score_first_ties_to_the_newer_turn(case):
    query, postings = case
    ranked = rank_postings(query, postings)
    matched = {p.turn_id for hits in postings.values() for p in hits}
    assert {s.turn_id for s in ranked} == matched
    keys = [(-round(s.score, 9), -s.seq, s.turn_id) for s in ranked]
    assert keys == sorted(keys)


def test_scores_a_rounding_apart_tie_and_the_newer_turn_wins_even_past_the_limit():
    """Two turns whose scores differ by less than the rounding are a tie: the newer one
    ranks first, also when only one of them is asked for."""
    query = Query((QueryTerm("ashfern", "ashfern", 1.0), QueryTerm("tonic", "tonic", 1e-13)))
    older, newer = Posting(1, 1, 10), Posting(2, 2, 10)
    postings = {"ashfern": [newer, older], "tonic": [older]}
    full = rank_postings(query, postings)
    assert full[0].score < full[1].score  # the older turn's raw score is higher
    assert [s.turn_id for s in full] == [2, 1]
    assert rank_postings(query, postings, 1) == full[:1]


def test_a_word_with_more_postings_than_the_cap_weighs_as_one_at_the_cap():
    query = Query((QueryTerm("leave", "leave", 1.0),))
    capped = [Posting(i, i, 10) for i in range(DF_CAP, 0, -1)]
    more = [Posting(i, i, 10) for i in range(DF_CAP + 50, 0, -1)]
    assert rank_postings(query, {"leave": capped})[0].score == (
        rank_postings(query, {"leave": more})[0].score
    )


def test_a_query_is_made_once_whatever_order_the_names_come_in():
    # The loader lists participants in seat order, the engine by role: one pack, one query.
    texts = ("Wren hides the ashfern tonic in the brinewick cellar.",)
    seated = make_query("Where is the tonic?", texts, ["DM", "Wren", "Cassia"])
    by_role = make_query("Where is the tonic?", texts, ["Cassia", "DM", "Wren"])
    assert by_role is seated
    assert {term.word: term.weight for term in seated.terms}["wren"] < CONTEXT_WEIGHT
