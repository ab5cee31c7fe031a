"""Rules added after measuring a real actual-play transcript (issue 10, asks 1, 2 and 4).

Every sentence here is written for the test (none is copied from a transcript); each
rule has a twin that must still be found, so a rule that drops everything fails.
"""

from __future__ import annotations

import pytest

from context_engine.memory.observe import admits, observe
from context_engine.memory.phrases import _coinable_pair, _coined_word
from context_engine.memory.tabletalk import is_meta_talk
from tests.context_engine.memory.turns import admitted_keys


def found(text: str, **kwargs) -> dict[str, str]:
    """merge key → category for what ``text`` offers."""
    return {o.key: o.category for o in observe(text, **kwargs)}


def admitted(turns: list[tuple[int, str]], speakers=()) -> set[str]:
    """Keys that earn an entry when (round, text) are public turns in this order."""
    return admitted_keys(turns, roles=speakers)


# --- out of character: the show, the stream, the people playing -----------------------


@pytest.mark.parametrize(
    "text",
    [
        "Hey everyone, I'm Dana Pell, voice actor, and I play Quillon Ashgrove.",
        "Remember the Tuesday livestream, and thanks to everyone in the chat room.",
        "We switched to 5th edition last month, so Corwen Hale plays by new rules.",
        "Half the donations go to Brightway Reads, so check it out.",
    ],
)
def test_a_turn_that_talks_about_the_show_is_not_a_source(text):
    assert is_meta_talk(text)
    assert observe(text) == []


def test_a_fictional_stream_or_audience_is_still_in_character():
    text = "The stream below Harrowgate runs red, and the audience at Harrowgate gasps."
    assert not is_meta_talk(text)
    assert "harrowgate" in found(text)


def test_names_joined_by_an_ampersand_are_a_company_not_lore():
    assert found("We got the new minis from Moss & Marrow yesterday.") == {}
    assert "moss marrow" in found("Moss Marrow waits at the gate of Dunmere.")


def test_a_full_name_starting_with_a_players_name_is_that_person():
    keys = found("Hi, I'm Dana Pell and tonight I'm playing Quillon.", ignore=["Dana"])
    assert "dana pell" not in keys and "quillon" in keys


@pytest.mark.parametrize("brand", ["Pathfinder", "Starfinder"])
def test_game_systems_said_at_the_table_are_brands(brand):
    assert found(f"Honestly {brand} had better rules for grappling.") == {}


# --- naming patterns --------------------------------------------------------------------


def test_a_naming_pattern_introduces_even_an_everyday_word():
    keys = found("The smith's apprentice, a gnome named Button, runs off with the tongs.")
    assert keys == {"button": "npc"}
    assert found("He sews a button back onto his coat.") == {}


def test_a_title_alone_is_never_a_name():
    keys = found("A couple named Lord and Lady Ashcombe hosts the harvest ball.")
    assert "lord" not in keys and "lady ashcombe" in keys


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("They fled the burned city of Corvane before dawn.", "corvane"),
        ("The drowned castle of Merrowdeep glitters under the ice.", "merrowdeep"),
        ("We rest in the far-off town of Ellisand tonight.", "ellisand"),
    ],
)
def test_a_place_of_pattern_allows_an_adjective_and_names_a_location(text, key):
    (obs,) = [o for o in observe(text) if o.key == key]
    assert obs.named and obs.category == "location"


# --- categories from cues ---------------------------------------------------------------


def test_a_language_someone_speaks_is_a_term():
    assert found("Only Brask speaks Gnollish, and badly.")["gnollish"] == "term"


@pytest.mark.parametrize(
    "text",
    ["Stay well away from the Saltwardens tonight.", "The Saltwardens are the watch here."],
)
def test_a_plural_name_is_a_group_even_after_a_place_word(text):
    assert found(text)["saltwarden"] == "faction"


def test_walking_over_to_someone_does_not_make_them_a_place():
    assert found("I walk over to Brannoc and grin.")["brannoc"] == "npc"
    assert found("We ride back to Corvane at dawn.")["corvane"] == "location"


def test_a_house_is_a_faction_even_when_you_go_there():
    assert found("I'm going to House Vellacourt to ask about wards.")["house vellacourt"] == (
        "faction"
    )


# --- phrases of ordinary words ----------------------------------------------------------


def test_an_ordinary_adjective_noun_pair_is_not_a_rare_phrase():
    keys = found("She studied the arcane arts in Velmora for years.")
    assert "arcane art" not in keys and "velmora" in keys


def test_a_rare_phrase_is_never_a_clause_with_a_pronoun():
    keys = found("I hid the brasswick sigil under my cloak before the gate.")
    assert not any("my" in key.split() for key in keys)


def test_a_pair_of_everyday_words_recurring_across_rounds_is_lore_only_once_marked():
    turns = [
        (1, "Kess winds the clockwork heart before the duel."),
        (3, "Without a working clockwork heart the golem slumps against the wall."),
        (5, "The clockwork hearts in the vault tick in unison."),
    ]
    assert "clockwork heart" not in admitted(turns)
    hyphen = [(1, "The clockwork-heart ticks."), *turns[1:]]
    assert "clockwork heart" in admitted(hyphen)
    called = [(1, "Kess winds what the tinkers call a clockwork heart."), *turns[1:]]
    assert "clockwork heart" in admitted(called)
    subject = [*turns[:2], (5, "The clockwork heart stutters and stops.")]
    assert "clockwork heart" in admitted(subject)


def test_a_pair_of_everyday_words_is_table_talk_however_often_it_recurs():
    turns = [
        (1, "We should fill in the ration cards for him."),
        (4, "Beautiful ration cards, with little drawings."),
        (9, "I sign all the ration cards."),
    ]
    assert "ration card" not in admitted(turns)
    known_as = [(1, "We fill in the stamped slips known as ration cards."), *turns[1:]]
    assert "ration card" in admitted(known_as)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("good", "luck"),  # an everyday modifier first
        ("next", "week"),
        ("gold", "pieces"),  # a measuring or generic head
        ("persuasion", "check"),
        ("dog", "barks"),  # a subject and its verb
        ("driver", "humming"),
        ("broken", "bridge"),  # a participle first
        ("nobody", "else"),  # function words
        ("residential", "district"),  # an adjective suffix
    ],
)
def test_ordinary_english_pairs_are_not_coinable(first, second):
    assert not _coinable_pair(first, second)


@pytest.mark.parametrize(("first", "second"), [("brass", "lung"), ("trust", "ledger")])
def test_coinages_of_common_words_are_coinable(first, second):
    assert _coinable_pair(first, second)


def test_unmarked_phrases_are_never_admitted_and_marked_ones_need_two_contexts():
    assert not admits("unmarked", mentions=9, turns=9, mid=0, named=False, contexts=4)
    assert not admits("common", mentions=3, turns=3, mid=0, named=False, contexts=1)
    assert admits("common", mentions=3, turns=3, mid=0, named=False, contexts=2)
    assert not admits("phrase", mentions=5, turns=5, mid=0, named=False, contexts=1)
    assert admits("phrase", mentions=2, turns=2, mid=0, named=False, contexts=2)


def test_a_lone_coined_lowercase_word_is_a_candidate_from_two_turns():
    turns = [(1, "An elder shows us the grimwhist."), (6, "Does anyone still keep a grimwhist?")]
    assert "grimwhist" in admitted(turns)
    assert "grimwhist" not in admitted(turns[:1])


def test_a_word_derived_from_english_is_not_coined():
    assert _coined_word("grimwhist")
    assert not _coined_word("tavernkeepers") or not _coined_word("bartenderers")
    assert not _coined_word("bartenderers")  # "bartender" + -ers


def test_an_idiom_of_everyday_words_is_not_a_coined_compound():
    from context_engine.memory.vocabulary import is_coined_compound

    assert not is_coined_compound("happy-go-lucky")
    assert not is_coined_compound("run-of-the-mill")
    assert is_coined_compound("salt-ghost")


def test_a_rare_adjective_before_a_noun_is_not_a_rare_phrase():
    keys = found("Vell gave us disdainful looks at the docks of Ombrith.")
    assert "disdainful look" not in keys and "ombrith" in keys
    assert "dwarven brunch" not in found("We all ate a dwarven brunch before noon.")
