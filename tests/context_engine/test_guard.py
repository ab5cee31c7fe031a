"""The output leak guard's matcher (context_engine.guard): verbatim runs of hidden text."""

from __future__ import annotations

import time

import pytest

from context_engine.guard import WINDOW, GuardStream, Hidden, LeakGuard, PhraseIndex, words

NOTE = "The innkeeper Maelis Orrow is secretly a cultist of the drowned god and keeps the ledger."


def guard(*texts: str, window: int = WINDOW) -> LeakGuard:
    return LeakGuard(
        [Hidden(key=f"turn:{i}", label=f"note {i}", text=t) for i, t in enumerate(texts)],
        window=window,
    )


def test_eight_words_in_a_row_of_a_hidden_text_are_a_quote():
    answer = "Thorin says: maelis orrow is secretly a cultist of the drowned god, I swear."
    [quote] = guard(NOTE).check(answer)
    assert quote.key == "turn:0"
    assert (
        answer[quote.start : quote.end] == "maelis orrow is secretly a cultist of the drowned god"
    )
    assert NOTE[quote.source_start : quote.source_end] == (
        "Maelis Orrow is secretly a cultist of the drowned god"
    )
    assert quote.words == 10


def test_seven_words_in_a_row_are_not():
    assert guard(NOTE).check("I think Orrow is secretly a cultist of the harbour guild.") == []


@pytest.mark.parametrize(
    "variant",
    [
        "MAELIS ORROW IS SECRETLY A CULTIST OF THE DROWNED GOD",
        "Maelis—Orrow is ... secretly, a cultist (of the Drowned God)!",
        "Maelis\nOrrow   is secretly a\tcultist of the drowned god",
        "ｍａｅｌｉｓ Orrow is secretly a cultist of the drowned god",  # full-width letters
    ],
)
def test_case_punctuation_spacing_and_unicode_forms_do_not_hide_a_quote(variant):
    assert len(guard(NOTE).check(f"Rumour: {variant}.")) == 1


def test_apostrophes_join_a_word_whichever_apostrophe_is_used():
    hidden = guard("Cassia's dagger is hidden under the loose stone of the chapel floor.")
    assert hidden.check("Cassia’s dagger is hidden under the loose stone of the chapel")
    assert words("don't Maelis’s")[0][0] == "dont"


def test_a_run_across_a_word_boundary_is_not_a_run_inside_a_word():
    # "keeper" is not "keep er": matching is by whole words, not characters.
    hidden = guard("the old lighthouse keeper hides the silver key under the chapel bell")
    assert hidden.check("the old lighthousekeeper hides the silver key under the chapel") == []


def test_stock_phrases_of_function_words_are_not_quotes():
    hidden = guard("and then he said that it was not the one that we had in mind at all")
    assert hidden.check("and then he said that it was not the one that we had") == []


def test_overlapping_hits_merge_into_one_run_per_source():
    text = "one two three four five six seven eight nine ten eleven twelve"
    [quote] = guard(text).check(f"so {text} ok")
    assert quote.words == 12


def test_two_sources_sharing_a_run_are_both_named():
    shared = "the ferryman drowned beneath the chapel bell at midnight"
    quotes = guard(f"GM: {shared}.", f"Whisper: {shared}!").check(f"Rumour: {shared}.")
    assert sorted(q.key for q in quotes) == ["turn:0", "turn:1"]


def test_two_separate_quotes_of_one_source_are_two_runs():
    note = (
        "alpha bravo charlie delta echo foxtrot golf hotel. "
        "india juliet kilo lima mike november oscar papa."
    )
    answer = (
        "alpha bravo charlie delta echo foxtrot golf hotel and then "
        "india juliet kilo lima mike november oscar papa"
    )
    quotes = guard(note).check(answer)
    assert [q.words for q in quotes] == [8, 8]
    assert quotes[0].end < quotes[1].start


def test_a_run_the_audience_can_already_read_is_not_a_leak():
    answer = "maelis orrow is secretly a cultist of the drowned god"
    public = ["Everyone heard it: Maelis Orrow is secretly a cultist of the drowned god."]
    candidates = guard(NOTE).check(answer)
    known = PhraseIndex(public, wanted=[q.phrase for q in candidates], window=WINDOW)
    assert guard(NOTE).check(answer, known=known) == []


def test_a_run_that_only_starts_with_public_words_still_leaks():
    answer = "maelis orrow is secretly a cultist of the drowned god and keeps the ledger"
    public = ["maelis orrow is secretly a cultist of the drowned"]
    candidates = guard(NOTE).check(answer)
    known = PhraseIndex(public, wanted=[q.phrase for q in candidates], window=WINDOW)
    assert len(guard(NOTE).check(answer, known=known)) == 1


def test_an_empty_guard_passes_everything():
    assert not guard()
    assert guard().check(NOTE) == []
    assert guard("too short").check("too short") == []


def test_big_secrets_index_and_check_in_linear_time():
    # 200,000 words of hidden text (a long campaign's notes and whispers) and a 2,000-word
    # answer: built and checked well within a model call's time.
    hidden = [
        Hidden(key=f"turn:{n}", label="x", text=" ".join(f"w{n}x{i}" for i in range(1000)))
        for n in range(200)
    ]
    started = time.perf_counter()
    big = LeakGuard(hidden)
    answer = " ".join(f"free{i}" for i in range(2000)) + " " + hidden[150].text[5000:5200]
    quotes = big.check(answer)
    elapsed = time.perf_counter() - started
    assert [q.key for q in quotes] == ["turn:150"]
    assert elapsed < 5.0


def test_the_stream_shows_text_only_as_it_passes_and_nothing_after_a_quote():
    answer = "Thorin says: I heard that maelis orrow is secretly a cultist of the drowned god!"
    stream = guard(NOTE).stream()
    shown = "".join(stream.feed(answer[i : i + 3]) for i in range(0, len(answer), 3))
    shown += stream.close()
    assert stream.held
    assert shown == "Thorin says: I heard that "
    assert "maelis" not in shown.lower()


def test_a_clean_stream_shows_all_of_it_by_the_end_and_holds_back_the_last_words():
    answer = "The innkeeper pours ale for everyone and the fire crackles in the hearth tonight."
    stream = GuardStream(guard(NOTE))
    shown = "".join(stream.feed(answer[i : i + 5]) for i in range(0, len(answer), 5))
    last_words = answer.split()[-(WINDOW - 1) :]
    assert not shown.endswith(last_words[-1] + ".")
    assert answer.startswith(shown)
    shown += stream.close()
    assert shown == answer and not stream.held


def test_the_stream_never_shows_the_start_of_a_run_that_becomes_a_quote():
    # Eight function-heavy words match first (not yet a quote); more words make it one.
    note = "and then it was that the ferryman drowned beneath the chapel bell"
    answer = "so and then it was that the ferryman drowned beneath the chapel bell"
    stream = guard(note).stream()
    shown = "".join(stream.feed(word + " ") for word in answer.split())
    shown += stream.close()
    assert stream.held
    assert shown == "so "


def test_the_stream_and_check_agree():
    answer = "We all know maelis orrow is secretly a cultist of the drowned god, right?"
    stream = guard(NOTE).stream()
    for ch in answer:
        stream.feed(ch)
    stream.close()
    assert stream.quotes == guard(NOTE).check(answer)
