"""An answer split into parts as it streams (issue 25): however the model's chunks fall,
each part opens with the audience the parser gives the stored turn, and no text is given
to a part before its audience is known."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from context_engine.agent_output import parse_agent_output
from context_engine.answer_stream import AnswerSplit, Part, Text, could_open_block
from context_engine.llm.offline import word_chunks

ROLES = ["Cassia", "Thorin", "DM"]
ANSWER = (
    "Thinking aloud.\n"
    "**PUBLIC:** Cassia lifts the lantern.\n"
    "She waits.\n"
    "TAGS: npc:Maelis\n"
    "WHISPER to Thorin: the key is under the stone\n"
    "MONOLOGUE: I am cold.\n"
    "HINGE\n"
    "```\n"
    "GM NOTE: only the DM writes these\n"
)


def split(chunks, *, speaker="Cassia", kind="player"):
    splitter = AnswerSplit(speaker=speaker, speaker_kind=kind, roles=ROLES, dm_roles=["DM"])
    events = []
    for chunk in chunks:
        events += splitter.feed(chunk)
    events += splitter.close()
    return events


def parts_of(events):
    parts, texts = {}, {}
    for event in events:
        if isinstance(event, Part):
            parts[event.index] = event
        else:
            assert event.index in parts, "text before its part opened"
            texts[event.index] = texts.get(event.index, "") + event.text
    return [(p.kind, p.visibility, p.needs_review, texts.get(i, "")) for i, p in parts.items()]


def stored(text, *, speaker="Cassia", kind="player"):
    turns = parse_agent_output(
        text, speaker=speaker, speaker_kind=kind, roles=ROLES, dm_roles=["DM"]
    )
    return [(t.kind, t.visibility, t.needs_review, t.content) for t in turns]


def test_each_part_streams_with_the_audience_and_text_the_parser_stores():
    streamed = parts_of(split(word_chunks(ANSWER)))
    expected = stored(ANSWER)
    assert [s[:3] for s in streamed] == [e[:3] for e in expected]
    # the texts agree (a player's refused GM note is stored with its label, for review)
    assert [s[3] for s in streamed[:4]] == [e[3] for e in expected[:4]]
    assert streamed[4][3] == "only the DM writes these"


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=len(ANSWER) - 1), max_size=40))
def test_how_the_chunks_fall_changes_nothing(cuts):
    cuts = sorted(set(cuts))
    edges = [0, *cuts, len(ANSWER)]
    chunks = [ANSWER[a:b] for a, b in itertools.pairwise(edges)]
    assert parts_of(split(chunks)) == parts_of(split([ANSWER]))


def test_the_start_of_a_line_waits_until_its_label_is_known():
    splitter = AnswerSplit(speaker="Cassia", speaker_kind="player", roles=ROLES, dm_roles=["DM"])
    assert splitter.feed("WHISPER to Tho") == []  # a whisper, but to whom?
    events = splitter.feed("rin: meet me")
    assert isinstance(events[0], Part) and events[0].visibility == ("Cassia", "DM", "Thorin")
    assert events[1] == Text(0, "meet me")


def test_a_dm_gm_note_goes_to_the_dm_roles_only():
    [(kind, visibility, review, text)] = parts_of(
        split(["GM NOTE: the idol", " is fake"], speaker="DM", kind="dm")
    )
    assert (kind, visibility, review, text) == ("gm_note", ("DM",), False, "the idol is fake")


def test_what_could_still_open_a_block():
    for partial in (
        "",
        "PUB",
        "**Whisper",
        "WHISPER to",
        "WHISPER to Cassia and",
        "GM_NO",
        "TAGS: a",
        "``",
    ):
        assert could_open_block(partial), partial
    for partial in ("She", "Public opinion", "Action is", "The"):
        assert not could_open_block(partial), partial
