"""World Bible candidates by rule, recurring coined phrases, merging and definitions."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from context_engine.llm import OfflineClient, client_for
from context_engine.memory import (
    define_term,
    extract_candidates,
    mentions,
    merge_key,
    recurring_phrases,
)


def terms(text: str, **kwargs) -> list[str]:
    return [candidate.term for candidate in extract_candidates(text, **kwargs)]


def test_coined_lowercase_hyphenated_compounds_are_candidates():
    found = extract_candidates("Thorin lifts the void-chisel. The ember-glass lantern flares.")
    assert [(c.term, c.category) for c in found if c.term.islower()] == [
        ("void-chisel", "artifact"),
        ("ember-glass", "artifact"),
    ]
    assert found[0].sentence == "Thorin lifts the void-chisel."


@pytest.mark.parametrize(
    "ordinary",
    [
        "well-known",
        "blood-red",
        "long-forgotten",
        "twenty-one",
        "half-elf",
        "self-aware",
        "mother-in-law",
        "x-ray",
    ],
)
def test_ordinary_hyphenated_words_are_not_candidates(ordinary):
    assert terms(f"It was a {ordinary} thing, said nobody.") == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The Geometers wait below.", ["Geometers"]),
        ("Suddenly Lord Vane laughs.", ["Lord Vane"]),
        ("Then the Iron Choir sings.", ["Iron Choir"]),
        ("Yesterday Mira found the key.", ["Mira"]),
        ('"Then we go," Mira says.', ["Mira"]),
        ("However, nobody came. Meanwhile rain fell.", []),
        ("Steal the Tide Codex for them.", ["Tide Codex"]),
        ("Confront Lord Vane at dawn.", ["Lord Vane"]),
        ("Order of the Ember waits.", ["Order of the Ember"]),
        ("Iron Choir marches.", ["Iron Choir"]),
    ],
)
def test_sentence_initial_common_words_are_ignored(text, expected):
    assert terms(text) == expected


def test_names_camelcase_and_all_caps_codes_are_found_but_not_shouting():
    text = (
        "The Order of the Ember meets in StormGate. Beneath it lies VOID_GATE. "
        "STOP shouting, said the guard."
    )
    found = {c.term: c.category for c in extract_candidates(text)}
    assert found == {
        "Order of the Ember": "faction",
        "StormGate": "location",
        "VOID_GATE": "location",
    }


def test_ordinary_vocabulary_is_not_lore():
    text = "The tavern was warm. Bread and Water cost a copper. We rest by the old road."
    assert terms(text) == []


def test_role_names_can_be_ignored_and_possessives_are_stripped():
    text = "Thorin reads Vane's letter to Cassia."
    assert terms(text, ignore={"Thorin", "Cassia"}) == ["Vane"]


def test_each_merge_key_is_reported_once_at_its_first_sentence():
    found = extract_candidates("The Geometers came. A Geometer spoke. Geometers left.")
    assert [(c.term, c.sentence) for c in found] == [("Geometers", "The Geometers came.")]


def test_rare_lowercase_phrases_that_recur_across_turns_are_found():
    texts = [
        "Mira drinks ashfern tonic before dawn.",
        "The ashfern tonic tastes of smoke; she drinks ashfern tonic again.",
        "We walk the old road. The old road is long.",
        "The old road again.",
    ]
    assert recurring_phrases(texts) == ["ashfern tonic"]
    assert recurring_phrases(texts, min_count=3) == []


def test_a_rare_phrase_in_one_turn_only_does_not_recur():
    texts = ["Mira drinks ashfern tonic. More ashfern tonic!", "Nothing else here."]
    assert recurring_phrases(texts) == []


def test_recurring_phrases_keep_compounds_with_a_coined_word():
    texts = ["The grey moon-wells hum softly.", "Beside the grey moon-wells we wait."]
    assert recurring_phrases(texts) == []  # one word: a compound, not a phrase
    texts = ["Light the ember-glass lantern.", "The ember-glass lantern dies."]
    assert recurring_phrases(texts) == ["ember-glass lantern"]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("the Geometers", "Geometers"),
        ("Geometers", "Geometer"),
        ("Vane's", "Vane"),
        ("void-chisel", "void chisel"),
        ("VOID_GATE", "Void Gate"),
        ("Ashfern Tonics", "ashfern tonic"),
    ],
)
def test_near_duplicates_share_a_merge_key(a, b):
    assert merge_key(a) == merge_key(b)


@pytest.mark.parametrize(("a", "b"), [("Geometer", "Geometry"), ("glass", "gas"), ("Vane", "Vale")])
def test_different_terms_keep_different_keys(a, b):
    assert merge_key(a) != merge_key(b)


def test_mentions_match_plural_case_and_article_but_not_substrings():
    assert mentions("Geometer", "Beware the geometers' tithe.")
    assert mentions("the Geometers", "A GEOMETER waits.")
    assert not mentions("Vane", "The vanguard rides past Vanessa.")
    assert not mentions("void-chisel", "The void is a chisel of dark.")


SENTENCES = ["Thorin lifts the void-chisel.", "The void-chisel cuts doors into stone."]


def test_offline_definitions_are_the_first_use_sentence():
    assert define_term("void-chisel", SENTENCES, client=OfflineClient()) == SENTENCES[0]
    assert define_term("void-chisel", SENTENCES, client=None) == SENTENCES[0]
    assert define_term("void-chisel", [], client=OfflineClient()) == ""


def test_a_model_definition_comes_from_the_model_and_the_usage(gemini_standin, gemini_settings):
    client = client_for("gemini-2.5-flash", gemini_settings)
    definition = define_term("void-chisel", SENTENCES, client=client)
    assert "stand-in" in definition
    prompt = gemini_standin.requests[0].prompt
    assert "Term: void-chisel" in prompt and SENTENCES[1] in prompt


@pytest.mark.parametrize("script", [["500", "500"], ["malformed_json"], ["missing_heading"]])
def test_a_failing_model_gives_the_first_use_sentence(openai_standin, openai_settings, script):
    openai_standin.script(script)
    client = client_for("openai:llama3.1", openai_settings)
    assert (
        define_term("void-chisel", SENTENCES, client=client, sleep=lambda s: None) == (SENTENCES[0])
    )


def test_wordfreq_works_with_the_network_unreachable():
    code = textwrap.dedent(
        """
        import socket
        def refuse(*args, **kwargs):
            raise OSError("network disabled for this test")
        socket.socket.connect = refuse
        socket.create_connection = refuse
        from wordfreq import zipf_frequency
        assert zipf_frequency("the", "en") > 7
        assert zipf_frequency("ashfern", "en") == 0
        assert 1 < zipf_frequency("geometers", "en") < 3
        print("offline ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "offline ok", done.stderr


@pytest.mark.parametrize(
    ("text", "term", "category"),
    [
        ("She sold the map to Idris Vane.", "Idris Vane", "npc"),
        ("We sleep in Lowmere tonight.", "Lowmere", "location"),
        ("Mist hides the stilt-houses.", "stilt-houses", "term"),
        ("The Brass Syndicate pays well.", "Brass Syndicate", "faction"),
        ("Saltmarsh Keep burns.", "Saltmarsh Keep", "location"),
        ("Captain Idris Vane bows.", "Captain Idris Vane", "npc"),
    ],
)
def test_categories_are_guessed_from_titles_heads_and_context(text, term, category):
    found = {c.term: c.category for c in extract_candidates(text)}
    assert found == {term: category}
