"""Search behind one selector, audience-filtered, from the turns' term rows."""

import pytest

from campaigns.models import Turn
from campaigns.reads import search, selectors
from tests.factories import make_experiment, make_turn

pytestmark = pytest.mark.django_db


def _search(experiment, role, text, **kwargs):
    viewer = selectors.viewer_for_role(experiment=experiment, role=role)
    return [
        t.content
        for t in search.search_turns(experiment=experiment, viewer=viewer, text=text, **kwargs)
    ]


def test_search_finds_an_old_turn_by_a_rare_word(campaign):
    make_turn(campaign, round=2, content="Wren pockets the brinewick oil.")
    for round_ in range(3, 20):
        make_turn(campaign, round=round_, content=f"Nothing happens in round {round_}.")
    assert _search(campaign, "Thorin", "where is the brinewick oil?") == [
        "Wren pockets the brinewick oil."
    ]


def test_search_never_returns_a_turn_the_viewer_cannot_read(campaign):
    make_turn(
        campaign,
        speaker="Cassia",
        kind="whisper",
        content="the ashfern cache is mine",
        visibility=["Cassia", "DM"],
    )
    make_turn(campaign, kind="gm_note", content="ashfern is poisoned")
    make_turn(campaign, speaker="Thorin", kind="monologue", content="ashfern smells odd")
    assert _search(campaign, "Thorin", "ashfern") == ["ashfern smells odd"]
    assert sorted(_search(campaign, "DM", "ashfern")) == [
        "ashfern is poisoned",
        "the ashfern cache is mine",
    ]


def test_search_ignores_common_words_and_stays_within_the_experiment(campaign, owner):
    other = make_experiment(owner=owner)
    make_turn(other, content="The lantern-moss glows in another campaign.")
    make_turn(campaign, content="The lantern-moss glows here.")
    assert _search(campaign, "Thorin", "where is the lantern moss") == [
        "The lantern-moss glows here."
    ]
    assert _search(campaign, "Thorin", "where is the") == []


def test_search_ranks_the_turn_that_shares_most_words_first(campaign):
    make_turn(campaign, round=2, content="The brass astrolabe hums under the moon.")
    for round_ in range(3, 12):
        make_turn(campaign, round=round_, content=f"The moon rises over camp {round_}.")
    make_turn(campaign, round=12, content="Someone mentions brass buttons.")
    found = _search(campaign, "Thorin", "brass astrolabe moon", limit=3)
    assert found[0] == "The brass astrolabe hums under the moon."
    assert "Someone mentions brass buttons." in found[1:]


def test_search_respects_before_round_and_limit(campaign):
    for round_ in range(1, 6):
        make_turn(campaign, round=round_, content=f"kestrel sighted in round {round_}")
    found = _search(campaign, "Thorin", "kestrel", before_round=4, limit=2)
    assert found == ["kestrel sighted in round 3", "kestrel sighted in round 2"]


def test_edited_content_is_searchable_by_its_new_words(campaign):
    turn = make_turn(campaign, content="a plain sentence")
    Turn.objects.filter(pk=turn.pk).update(content="the saltmarch bridge")
    assert _search(campaign, "Thorin", "saltmarch") == ["the saltmarch bridge"]


def _postings(experiment, role, words, *, rounds=False):
    viewer = selectors.viewer_for_role(experiment=experiment, role=role)
    return search.postings_query(
        experiment_id=experiment.pk, viewer=viewer, words=words, rounds=rounds
    ).rows()


def test_postings_keep_to_the_campaign_of_campaigns_played_at_once(owner):
    # Two campaigns played at once (their turn ids and seqs interleave in the term rows'
    # keys only by experiment), then one alone.
    first = make_experiment(owner=owner)
    second = make_experiment(owner=owner)
    for round_ in range(1, 31):
        for experiment, word in ((first, "ember"), (second, "frost")):
            make_turn(experiment, round=round_, content=f"The {word} lantern flickers.")
            make_turn(
                experiment,
                round=round_,
                kind="gm_note",
                content=f"The lantern hides a {word} key.",
            )
            make_turn(experiment, round=round_, speaker="Thorin", content="Thorin waits.")
    alone = make_experiment(owner=owner)
    for round_ in range(1, 11):
        make_turn(alone, round=round_, content="The ember lantern flickers alone.")
    words = ["lantern", "ember", "frost", "waits"]
    for experiment in (first, second, alone):
        own = set(Turn.objects.filter(experiment=experiment).values_list("id", flat=True))
        for role in ("Thorin", "DM"):
            rows = _postings(experiment, role, words)
            assert rows and {row[1] for row in rows} <= own
    assert {row[0] for row in _postings(first, "DM", words)} == {0, 1, 3}  # no frost
    assert {row[0] for row in _postings(second, "DM", words)} == {0, 2, 3}  # no ember


def test_postings_are_each_words_newest_readable_matches_whatever_hides_among_them(campaign):
    """The postings apply the visibility rule to the term rows before the cap (and, on
    PostgreSQL during a backlog, to the rows the match function returns, reading past
    its scan limit when too few of those were readable): per word, exactly the newest
    `DF_CAP` turns the viewer may read, however many hidden ones use the word."""
    from django.utils import timezone

    from context_engine.ranking import DF_CAP

    readable_old = [make_turn(campaign, round=1, content=f"old kestrel {i}") for i in range(3)]
    Turn.objects.bulk_create(
        Turn(
            experiment=campaign,
            seq=10 + i,
            round=2 + i // 8,
            speaker="DM",
            kind="gm_note",
            content=f"hidden kestrel and heron {i}",
            visibility=["DM"],
            tokens=6,
        )
        for i in range(2 * DF_CAP + 120)  # more hidden matches than a word keeps
    )
    for i in range(DF_CAP + 15):  # more readable heron turns than a word keeps
        make_turn(campaign, round=100 + i // 8, content=f"a heron {i}")
    make_turn(campaign, round=200, speaker="Cassia", kind="monologue", content="my kestrel")
    make_turn(campaign, round=200, speaker="Thorin", kind="monologue", content="our kestrel")
    held = make_turn(campaign, round=201, content="a held kestrel")
    Turn.objects.filter(pk=held.pk).update(held_at=timezone.now())

    words = ["kestrel", "heron"]
    for role in ("Thorin", "Cassia", "DM"):
        viewer = selectors.viewer_for_role(experiment=campaign, role=role)
        readable = selectors.turns_visible_to(experiment=campaign, viewer=viewer).order_by("-seq")
        expected = [
            (index, turn.pk, turn.seq, turn.tokens, turn.speaker, turn.round)
            for index, word in enumerate(words)
            for turn in [t for t in readable if word in t.content][:DF_CAP]
        ]
        assert _postings(campaign, role, words, rounds=True) == expected
        # A pack's read leaves the round out (only /search before a round needs it).
        assert _postings(campaign, role, words) == [row[:5] for row in expected]
    thorin = [row[1] for row in _postings(campaign, "Thorin", ["kestrel"])]
    assert thorin[-3:] == [turn.pk for turn in reversed(readable_old)]
    assert held.pk not in thorin


def test_sqlite_postings_rows_are_put_by_word_each_words_newest_first():
    # The statement leaves its union unordered; its callers group the rows by word.
    rows = [(1, 10, 5, 3, 1), (0, 11, 2, 3, 1), (1, 12, 9, 3, 2), (0, 13, 7, 3, 2)]
    rows.append((2, 14, 1, 3, 1))
    assert search.in_word_order(rows) == [
        (0, 13, 7, 3, 2),
        (0, 11, 2, 3, 1),
        (1, 12, 9, 3, 2),
        (1, 10, 5, 3, 1),
        (2, 14, 1, 3, 1),
    ]
