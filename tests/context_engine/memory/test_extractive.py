"""The offline digest holds facts: Key Facts picked from untagged history, per audience."""

from __future__ import annotations

import re
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from context_engine.memory import fallback_digest, parse_digest
from context_engine.memory.template import FACTS, NONE_LINE
from context_engine.tokens import count
from context_engine.types import DIGEST_HEADINGS, DigestView
from tests.context_engine.memory.test_digest import as_previous
from tests.context_engine.memory.turns import Story

CHATTER = (
    "{who} says the weather is nice today and asks how everyone is doing.",
    "{who} laughs and says that sounds like a good plan to them.",
    "{who} agrees that it was a really good day for everyone here.",
    "{who} thinks they should all go out and have some fun again soon.",
)
# (round, speaker, sentence, the strings a reader must find in the digest)
PLANTED = (
    (3, "Caroline", "I went to the LGBTQ support group on 7 May 2023.", ("LGBTQ", "7 May 2023")),
    (5, "Melanie", "We painted a sunrise over Lake Tahoe in 2022.", ("Lake Tahoe", "2022")),
    (9, "DM", "The ferryman Osric demands 40 silver crowns for the crossing.", ("Osric", "40")),
    (12, "Caroline", "I decided to apply to the Brightwater adoption agency.", ("Brightwater",)),
    (17, "DM", "Brother Aldwin reveals that the Saltmere archive burned in March.", ("Saltmere",)),
    (20, "Melanie", "My daughter Rosalind turns 11 on Tuesday.", ("Rosalind", "11")),
)


def untagged_history(rounds: int = 20) -> Story:
    """Everyday chatter every round, and six planted facts; no tag, no hinge."""
    story = Story()
    planted = {r: (speaker, text) for r, speaker, text, _ in PLANTED}
    for r in range(1, rounds + 1):
        for index, who in enumerate(("Caroline", "Melanie")):
            chatter = CHATTER[(r + index) % len(CHATTER)].format(who=who)
            story.add(r, who, f"{chatter} {CHATTER[(r + index + 1) % 4].format(who='She')}")
        if r in planted:
            speaker, text = planted[r]
            story.add(r, speaker, f"Well, here is some news. {text}")
    return story


def facts_of(result) -> str:
    return dict(result.sections).get(FACTS, "")


def fold_every(turns, interval: int, max_tokens: int) -> list:
    """Fold ``turns`` every ``interval`` rounds, as the summarizer does; every version."""
    versions, previous = [], None
    last = max(turn.round for turn in turns)
    for start in range(1, last + 1, interval):
        new = [t for t in turns if start <= t.round < start + interval]
        if not new:
            continue  # nothing new: the summarizer writes no version
        result = fallback_digest(previous, new, max_tokens=max_tokens)
        versions.append(result)
        previous = as_previous(result, start + interval - 1)
    return versions


def test_an_untagged_history_keeps_its_names_numbers_and_dates_with_their_rounds():
    result = fallback_digest(None, untagged_history().turns, max_tokens=400)
    facts = facts_of(result)
    assert count(result.text) <= 400
    for round_, speaker, _, answers in PLANTED:
        line = next(
            (ln for ln in facts.splitlines() if ln.startswith(f"- R{round_} {speaker}:")), ""
        )
        for answer in answers:
            assert answer in line, f"R{round_} {answer!r} missing from {facts!r}"


def test_a_history_with_content_is_never_only_placeholders():
    story = Story()
    story.add(1, "Thorin", "We rest by the fire and share bread.")
    result = fallback_digest(None, story.turns)
    assert facts_of(result) == "- R1 Thorin: We rest by the fire and share bread."
    assert [heading for heading, _ in result.sections] == [*DIGEST_HEADINGS, FACTS]
    assert dict(result.sections)["Open Threads"] == NONE_LINE  # tags still give the others


def test_repeated_scene_sentences_are_kept_once():
    story = Story()
    for r in range(1, 9):
        story.add(
            r,
            "DM",
            "Rain drums on the roofs of the old mill while the wind pulls at every shutter.",
        )
    story.add(
        9, "DM", "Rain drums on the roofs of the chapel while the wind pulls at every shutter."
    )
    facts = facts_of(fallback_digest(None, story.turns))
    assert facts.count("Rain drums") == 1


def test_private_turns_are_labelled_with_their_kind():
    story = Story()
    story.add(
        2,
        "Thorin",
        "I hid the Quillstone under my cloak.",
        kind="whisper",
        visibility=("DM", "Thorin"),
    )
    story.add(
        2, "DM", "The Quillstone is cursed by the Ashen Prior.", kind="gm_note", visibility=("DM",)
    )
    facts = facts_of(fallback_digest(None, story.turns))
    assert "- R2 Thorin (whisper): I hid the Quillstone" in facts
    assert "- R2 DM (GM note): The Quillstone is cursed" in facts


def test_a_sentence_the_hinge_index_holds_is_not_repeated_as_a_fact():
    story = Story()
    story.add(
        1, "Thorin", "I cut the rope before the fire reaches Ashfall.", kind="action", hinge=True
    )
    story.add(1, "DM", "The Iron Choir cheers from the cliffs of Ashfall.")
    result = fallback_digest(None, story.turns)
    assert "I cut the rope" in dict(result.sections)["Hinge Index"]
    assert "I cut the rope" not in facts_of(result)


def test_a_campaign_folded_every_four_rounds_keeps_early_and_late_facts_within_budget():
    turns = untagged_history(30).turns
    story = Story()
    story.turns = list(turns)
    story.add(27, "DM", "Osric's ferry sinks at Greywater on 2 June 1421.")
    versions = fold_every(story.turns, 4, 300)
    assert all(count(version.text) <= 300 for version in versions)
    final = facts_of(versions[-1])
    rounds = {int(r) for r in re.findall(r"^- R(\d+) ", final, flags=re.MULTILINE)}
    assert min(rounds) <= 5 and max(rounds) >= 27  # newer folds did not wipe the oldest out
    for answer in ("LGBTQ", "Osric", "Brightwater", "Rosalind", "Greywater"):
        assert answer in final


def test_the_facts_fold_back_in_and_rerunning_adds_nothing():
    turns = untagged_history().turns
    first = fallback_digest(None, turns, max_tokens=400)
    again = fallback_digest(as_previous(first, 20), turns, max_tokens=400)
    assert again.text == first.text
    assert parse_digest(first.text) == first.sections


def test_the_offline_digest_is_deterministic_whatever_the_order_of_its_input():
    turns = untagged_history().turns
    first = fallback_digest(None, turns, max_tokens=300)
    assert fallback_digest(None, list(reversed(turns)), max_tokens=300) == first
    assert fallback_digest(None, sorted(turns, key=lambda t: t.speaker), max_tokens=300) == first


# -- no leaks, budgets held, determinism: random campaigns with random audiences ---------

ROLES = ("DM", "Thorin", "Cassia", "Bram")
KINDS = ("narrative", "action", "whisper", "gm_note")


def marker(index: int) -> str:
    return f"Qz{chr(97 + index // 26)}{chr(97 + index % 26)}k"


def may_read(visibility, role: str) -> bool:  # written out apart from the engine's rule
    return visibility is None or role in visibility


@st.composite
def histories(draw):
    story = Story()
    for index in range(draw(st.integers(1, 30))):
        visibility = draw(
            st.one_of(
                st.none(),
                st.lists(st.sampled_from(ROLES), min_size=1, max_size=3, unique=True).map(
                    lambda roles: tuple(sorted(roles))
                ),
            )
        )
        quoted = draw(st.integers(0, index)) if index else 0
        story.add(
            draw(st.integers(1, 12)),
            draw(st.sampled_from(ROLES)),
            f"The {marker(index)} took 3 keys to Saltmere. Someone recalls the {marker(quoted)}.",
            kind=draw(st.sampled_from(KINDS)),
            visibility=visibility,
            hinge=draw(st.booleans()),
        )
    story.turns.sort(key=lambda t: (t.round, t.seq))
    return story.turns, draw(st.integers(1, 4)), draw(st.sampled_from((200, 400, 1500)))


@settings(max_examples=80, deadline=None)
@given(histories())
def test_no_audience_digest_holds_a_marker_of_a_turn_it_cannot_read(case):
    turns, interval, max_tokens = case
    for role in ROLES:
        readable = [t for t in turns if may_read(t.visibility, role)]
        allowed = {m for t in readable for m in re.findall(r"Qz[a-z]{2}k", t.content)}
        for version in fold_every(readable, interval, max_tokens) if readable else ():
            stray = set(re.findall(r"Qz[a-z]{2}k", version.text)) - allowed
            assert not stray, f"{role} got {stray}"
            assert FACTS in dict(version.sections) or any(t.hinge for t in readable)


@settings(max_examples=60, deadline=None)
@given(histories())
def test_without_hinges_the_digest_stays_in_budget_and_is_the_same_every_time(case):
    turns, interval, max_tokens = case
    plain = [replace(t, hinge=False) for t in turns]
    versions = fold_every(plain, interval, max_tokens)
    assert all(count(version.text) <= max_tokens for version in versions)
    assert [v.text for v in fold_every(plain, interval, max_tokens)] == [v.text for v in versions]


def test_a_digest_from_text_alone_folds_its_facts_like_one_with_sections():
    first = fallback_digest(None, untagged_history().turns, max_tokens=400)
    text_only = DigestView(audience=None, round_from=1, round_to=20, text=first.text)
    story = Story()
    story.add(21, "DM", "A courier from Brightwater brings 3 sealed letters.")
    with_sections = fallback_digest(as_previous(first, 20), story.turns, max_tokens=400)
    assert fallback_digest(text_only, story.turns, max_tokens=400).text == with_sections.text
