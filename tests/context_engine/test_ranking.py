"""BM25 over postings (`context_engine.ranking.rank_postings`): the order the retrieval
section, ``/search`` and the Arena's replay all take their hits in."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_engine.ranking import (
    CONTEXT_WEIGHT,
    DF_CAP,
    REFERENCE_DOCS,
    SPEAKER_BONUS,
    Bm25Index,
    Posting,
    Query,
    QueryTerm,
    Scored,
    as_postings,
    idf,
    make_query,
    postings_of,
    rank_postings,
    ranked_ids,
    speaker_code,
    terms,
    tf_part,
)

WORDS = ("ashfern", "tonic", "brinewick", "oil", "leave")


@st.composite
def ranked_inputs(draw):
    """A query and its postings: few distinct turns, lengths and speakers, so scores tie
    often; the query names some of the speakers (or none)."""
    weights = st.sampled_from([1.0, 0.3, 0.1, 0.03]) | st.floats(0.001, 2.0)
    words = draw(st.lists(st.sampled_from(WORDS), unique=True, max_size=len(WORDS)))
    speakers = draw(st.frozensets(st.integers(0, 3)))
    query = Query(tuple(QueryTerm(word, word, draw(weights)) for word in words), speakers)
    turns = draw(
        st.lists(
            st.tuples(st.integers(1, 60), st.integers(1, 12), st.integers(-1, 3)),
            unique_by=lambda turn: turn[0],
            max_size=40,
        )
    )
    postings = {}
    for word in words:
        chosen = draw(st.lists(st.sampled_from(turns), unique=True)) if turns else []
        # A turn's seq is its id here: newest first, as the databases give them.
        postings[word] = [
            Posting(i, i, tokens, speaker) for i, tokens, speaker in sorted(chosen, reverse=True)
        ]
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


def _term_by_term(query, postings, limit=None):
    """The formula as written, one posting at a time in query order (what
    `rank_postings` computed before its arithmetic ran over arrays), then the speaker
    bonus once per turn the query's speakers said whose score is worth the bonus."""
    weighted = [
        (term.weight * idf(min(len(hits), DF_CAP), REFERENCE_DOCS), hits)
        for term in query.terms
        if (hits := postings.get(term.word))
    ]
    known = {posting[0]: posting for _, hits in weighted for posting in hits}
    if not known:
        return []
    avg = sum(posting[2] for posting in known.values()) / len(known)
    scores: dict[int, float] = {}
    for weight, hits in weighted:
        for turn_id, _seq, tokens, _speaker in hits:
            scores[turn_id] = scores.get(turn_id, 0.0) + weight * tf_part(1, tokens, avg)
    for turn_id, score in scores.items():
        if known[turn_id][3] in query.speakers and score >= SPEAKER_BONUS:
            scores[turn_id] = score + SPEAKER_BONUS
    keyed = sorted((-round(v, 9), -known[t][1], t, v) for t, v in scores.items())
    return [Scored(t, -neg_seq, v) for _, neg_seq, t, v in keyed][:limit]


@settings(max_examples=400, deadline=None)
@given(ranked_inputs(), st.integers(0, 45) | st.none(), st.booleans())
def test_every_score_is_the_float_the_term_by_term_sum_gives(case, limit, as_arrays):
    """Over arrays or tuples, the ranking and every score are bit for bit the formula's
    own, posting by posting: the loader, the replay and /search rank alike whatever
    form their postings take."""
    query, postings = case
    if as_arrays:
        postings = {word: as_postings(hits) for word, hits in postings.items()}
        tuples = {word: [tuple(p) for p in hits.tolist()] for word, hits in postings.items()}
    else:
        tuples = postings
    ranked = rank_postings(query, postings, limit)
    assert ranked == _term_by_term(query, tuples, limit)
    assert ranked_ids(query, postings, limit) == [s.turn_id for s in ranked]


def test_a_negative_limit_is_refused():
    with pytest.raises(ValueError, match="limit"):
        rank_postings(make_query("oil"), {"oil": [Posting(1, 1, 4)]}, -1)


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


def test_a_turn_spoken_by_the_participant_the_input_names_outranks_the_same_words_said_by_another():
    """Asked "When did Mara sell the lantern?", Mara's own turn answers, not the newer one
    where Oren says the same words (without the bonus the tie goes to the newer turn)."""
    names = ["DM", "Mara", "Oren"]
    query = make_query("When did Mara sell the lantern?", (), names)
    assert query.speakers == {speaker_code("Mara")}
    docs = [
        (1, 1, "The lantern went for two coins.", 7, "Mara"),
        (2, 2, "The lantern went for two coins.", 7, "Oren"),
        (3, 3, "Mara went to the market.", 6, "DM"),
    ]
    ranked = rank_postings(query, postings_of(query, docs))
    assert [s.turn_id for s in ranked][:2] == [1, 2]
    assert ranked[0].score - ranked[1].score == pytest.approx(SPEAKER_BONUS)
    unnamed = make_query("When was the lantern sold?", (), names)
    assert not unnamed.speakers
    assert [s.turn_id for s in rank_postings(unnamed, postings_of(unnamed, docs))][:2] == [2, 1]


def test_a_named_speakers_turn_that_shares_only_a_context_word_gains_nothing():
    """The bonus goes to turns whose own match is worth it: a turn of Mara's that shares
    only a word of the newest turns (weighed lightly) scores as the same words by Oren."""
    names = ["DM", "Mara", "Oren"]
    query = make_query("When did Mara sell the lantern?", ("The harbour smells of tar.",), names)
    docs = [
        (1, 1, "Tar again, all over the harbour.", 7, "Mara"),
        (2, 2, "Tar again, all over the harbour.", 7, "Oren"),
    ]
    ranked = {s.turn_id: s.score for s in rank_postings(query, postings_of(query, docs))}
    assert 0 < ranked[1] == ranked[2] < SPEAKER_BONUS


def test_names_in_the_newest_turns_make_no_speaker_only_the_input_does():
    """The newest turns name both sides of an exchange: a bonus for both would cancel out,
    so only a name the input says makes its participant a speaker of the query."""
    names = ["DM", "Mara", "Oren"]
    context = ("Mara: Oren, you kept the lantern?", "Oren: I did, Mara.")
    assert not make_query("Who kept the lantern?", context, names).speakers
    both = make_query("Did Oren give Mara the lantern?", context, names)
    assert both.speakers == {speaker_code("Mara"), speaker_code("Oren")}
    # "DM" is too short to be a search word: a question to the DM names no speaker.
    assert not make_query("Ask the DM about the lantern", (), names).speakers


def _classic(docs, text):
    """Classic BM25 written document by document, each score a sum over the query's
    sorted terms, from 0 (what `Bm25Index.rank` computed before its inverted index)."""
    tfs = []
    for _, doc in docs:
        counts: dict[str, int] = {}
        for term in terms(doc):
            counts[term] = counts.get(term, 0) + 1
        tfs.append(counts)
    lengths = [sum(c.values()) for c in tfs]
    avg = sum(lengths) / len(lengths) if lengths else 0.0
    df: dict[str, int] = {}
    for counts in tfs:
        for term in counts:
            df[term] = df.get(term, 0) + 1
    weights = {t: idf(df[t], len(docs)) for t in sorted(set(terms(text))) if t in df}
    scored = []
    for index, counts in enumerate(tfs):
        score = sum(
            w * tf_part(counts[t], lengths[index], avg) for t, w in weights.items() if t in counts
        )
        if score > 0:
            scored.append((-round(score, 9), -index, docs[index][0], score))
    scored.sort(key=lambda s: (s[0], s[1]))
    return [(key, score) for _, _, key, score in scored]


sentences = st.lists(st.sampled_from([*WORDS, "salt", "gate", "the", "oils"]), max_size=8).map(
    " ".join
)


@settings(max_examples=300, deadline=None)
@given(st.lists(sentences, max_size=12), sentences)
def test_the_classic_index_scores_as_the_formula_written_document_by_document(docs, text):
    keyed = [(f"d{i}", doc) for i, doc in enumerate(docs)]
    assert Bm25Index(keyed).rank(text) == _classic(keyed, text)
