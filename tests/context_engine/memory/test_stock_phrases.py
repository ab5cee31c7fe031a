"""A World Bible that ignores stock phrases (issue 22, ask 6).

Agent players repeat everyday sentences; a phrase of two everyday words is lore only once
something marks it, and a stock line said again is no second use. A proper name said
once in the DM's narration is lore. Every rule has a twin that must still be found.
"""

from __future__ import annotations

import pytest

from tests.context_engine.memory.agent_campaign import COINED, NAMED_ONCE, PLAYERS, STOCK, TURNS
from tests.context_engine.memory.turns import admitted_keys

SCENE = "Rain hammers the roofs as the party waits."


def agent_campaign() -> set[str]:
    return admitted_keys(TURNS, roles=PLAYERS)


def narrated(*sentences: str) -> set[str]:
    """Keys admitted from one DM narration turn."""
    return admitted_keys([(1, "DM", " ".join(sentences))], roles=PLAYERS)


def test_agents_repeating_stock_phrases_for_rounds_give_no_proposals():
    keys = agent_campaign()
    assert not [key for key in keys if any(stock in key for stock in STOCK)]
    # Everything proposed is a real name or coinage of the story.
    assert all(any(real in key for real in (*NAMED_ONCE, *COINED)) for key in keys), keys


def test_each_name_said_once_in_the_narration_is_proposed():
    keys = agent_campaign()
    missing = [name for name in NAMED_ONCE if not any(key.endswith(name) for key in keys)]
    assert missing == []
    assert set(COINED) <= keys  # a coinage the DM and a player use stays lore


@pytest.mark.parametrize(
    ("sentence", "key"),
    [
        ("Rain follows you into the city of Vell Amar.", "vell amar"),
        ("The watch waves you past the Thornwick Gate.", "thornwick gate"),
        ("In the square the Greycloaks pass in silence.", "greycloak"),
        ("An old monk named Brother Anselm beckons.", "brother anselm"),
        ("Word is that Lady Corisande pays well.", "lady corisande"),
        ("Her steward, Captain Harl Dunmore, waits.", "captain harl dunmore"),
        ("The ledger is hidden in the Sunken Quarter.", "sunken quarter"),
        ("They meet at the Tallow Market at noon.", "tallow market"),
        ("The ship sails from Karsholm tonight.", "karsholm"),
        ("A courier from House Vellacourt arrives.", "house vellacourt"),
        ("Tallow Market is busy at noon.", "tallow market"),
        ("A clerk hands the letter to Odrin Vasse.", "odrin vasse"),
    ],
)
def test_a_name_said_once_in_narration_is_lore(sentence, key):
    assert key in narrated(SCENE, sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "Morning comes grey and cold over the rooftops.",  # sentence-initial common words
        "Nobody answers, and I wait until Monday in March.",  # "I", days and months
        "Gloomfen is cold this time of year.",  # a lone word at a sentence start
        "Captain Brannoc salutes the crowd.",  # a participant with a title
        "Brannoc and Ilse follow the Greycloak trail.",  # the participants themselves
        "The Gate stands open.",  # an ordinary capitalised word
    ],
)
def test_ordinary_capitalised_words_and_the_participants_are_not_names(sentence):
    keys = narrated(SCENE, sentence)
    assert not keys & {"morning", "monday", "march", "i", "gloomfen", "gate", "the"}
    assert not any("brannoc" in key or "ilse" in key for key in keys)


def test_a_name_said_once_by_a_player_waits_for_a_second_mention():
    once = [(1, "Ilse", "I head for the Thornwick Gate before dawn.")]
    assert "thornwick gate" not in admitted_keys(once, roles=PLAYERS)
    twice = [*once, (2, "Garrick", "The Thornwick Gate is shut.")]
    assert "thornwick gate" in admitted_keys(twice, roles=PLAYERS)


def test_a_stock_line_said_again_is_not_a_recurrence():
    line = "Garrick rubs the cowrie shell at his throat for luck."
    again = "Garrick rubs the cowrie shell at his throat, for luck, as always."
    assert "cowrie shell" not in admitted_keys([(1, "Garrick", line), (2, "Garrick", again)])
    # Another speaker, or the same speaker saying something new, is a second use.
    echoed = [(1, "Garrick", line), (2, "Ilse", line)]
    assert "cowrie shell" in admitted_keys(echoed)
    new = [(1, "Garrick", line), (2, "Garrick", "He trades the cowrie shell for bread.")]
    assert "cowrie shell" in admitted_keys(new)


def test_coined_lowercase_terms_still_recur_into_lore():
    turns = [
        (1, "Brannoc", "Brannoc drinks ashfern tonic and coughs."),
        (2, "DM", "The ashfern tonic burns going down. Thorin lifts the void-chisel."),
        (3, "Ilse", "The void-chisel is cold, and the ember-glass lamp glows."),
        (4, "DM", "Light pours through the ember-glass."),
    ]
    assert {"ashfern tonic", "void chisel", "ember glass"} <= admitted_keys(turns)


@pytest.mark.parametrize(
    ("marked", "plain"),
    [
        ("Kess shows us what the divers call a brass lung.", "He fixes the brass lung."),
        ("The brass lung wheezes in the dark.", "He fixes the brass lung."),
        ("He sells the brass lung of Karrow.", "He fixes the brass lung."),
    ],
)
def test_a_marked_pair_of_everyday_words_is_lore_once_it_recurs(marked, plain):
    turns = [(1, "Ilse", marked), (2, "DM", plain), (3, "Garrick", f"{plain} Again.")]
    assert "brass lung" in admitted_keys(turns)
    assert "brass lung" not in admitted_keys([(1, "Ilse", plain), *turns[1:]])


@pytest.mark.parametrize(
    "sentence",
    [
        "Call it pure habit, he explains.",  # an idiom, not a naming
        "The lentil stew smells of cumin.",  # a sense verb describes, it does not act
        "The lentil stew is thin tonight.",
        "He orders the lentil stew of the day.",  # "of" an ordinary word
    ],
)
def test_everyday_wording_is_not_a_mark(sentence):
    turns = [(r, speaker, sentence) for r, speaker in enumerate(("Ilse", "DM", "Garrick"), 1)]
    turns += [(4, "Brannoc", "Pure habit and lentil stew, that is me.")]
    keys = admitted_keys(turns, roles=PLAYERS)
    assert "pure habit" not in keys and "lentil stew" not in keys
