"""Weak model output, engine side (issue 26, ask 4): the echo detector, what counts as
usable, the DM's answer-step instruction and the repair request."""

from __future__ import annotations

import pytest

from context_engine.agent_output import parse_agent_output
from context_engine.relay import (
    ACT,
    ANSWER,
    DM_FORMAT,
    MEMORY_TOOL,
    PLAYER_FORMAT,
    Step,
    Whisper,
    repair_instruction,
    step_instruction,
)
from context_engine.weak_output import drop_echoes, is_echo, usable

ROLES = ("DM", "Thorin", "Cassia")
THORIN_ACTS = Step(ACT, "Thorin", "player", 3)
INSTRUCTIONS = step_instruction(THORIN_ACTS)


def parse(text: str, speaker: str = "Thorin", kind: str = "player"):
    return parse_agent_output(
        text, speaker=speaker, speaker_kind=kind, roles=ROLES, dm_roles=("DM",)
    )


@pytest.mark.parametrize(
    "line",
    [line for line in PLAYER_FORMAT.format(dm="DM").splitlines()[1:4]]
    + [line for line in DM_FORMAT.splitlines()[1:6]],
)
def test_every_line_of_the_formats_echoed_back_is_an_echo(line):
    content = line.split(":", 1)[1]
    assert is_echo(content, f"{PLAYER_FORMAT.format(dm='DM')}\n{DM_FORMAT}\n{MEMORY_TOOL}")


@pytest.mark.parametrize(
    "content",
    [
        "Add 'TAGS: npc:Name, thread:topic' to remember it",
        "WHISPER to NAME: something",
        "/search QUERY",
    ],
)
def test_template_placeholders_are_echoes_whatever_else_is_said(content):
    assert is_echo(content, "")


@pytest.mark.parametrize(
    "content",
    [
        "Thorin dives for the door and drags Cassia with him.",
        "Can I feel a draught under the door?",
        "I act.",  # too few words to call an echo by overlap
        "Thorin acts once.",
        "Stay calm and watch who moves first.",
    ],
)
def test_real_answers_are_not_echoes(content):
    assert not is_echo(content, INSTRUCTIONS)


def test_role_names_are_the_answers_own_words_not_the_formats():
    answer_step = Step(ANSWER, "DM", "dm", 2, whisperers=("Thorin",))
    note = "Round 2: answered Thorin in private."
    assert not is_echo(note, step_instruction(answer_step), names=ROLES)


def test_drop_echoes_keeps_the_real_items_in_order_and_counts_the_rest():
    parsed = parse(
        "PUBLIC: what everyone sees you do or say.\n"
        "PUBLIC: Thorin dives for the door.\n"
        "MONOLOGUE: your private thoughts; no one else ever reads them."
    )
    kept, dropped = drop_echoes(parsed, INSTRUCTIONS)
    assert ([t.content for t in kept], dropped) == (["Thorin dives for the door."], 2)


def test_only_review_items_are_unusable():
    assert not usable(parse("I look around and wait."))
    assert not usable([])
    assert usable(parse("stray words\nPUBLIC: Thorin waits."))


def answer_step(*whispers: Whisper) -> Step:
    names = tuple(dict.fromkeys(w.speaker for w in whispers))
    return Step(ANSWER, "DM", "dm", 4, whisperers=names, whispers=whispers)


def test_the_answer_step_names_each_whisperer_with_the_round_and_first_words():
    step = answer_step(
        Whisper("Thorin", 4, "Can I feel a draught?"),
        Whisper("Cassia", 4, "one two three four five six seven eight nine ten eleven twelve 13"),
        Whisper("Thorin", 4, "And is the bell cracked?"),
    )
    text = step_instruction(step)
    assert (
        '- Thorin whispered to you (round 4: "Can I feel a draught?"; '
        'round 4: "And is the bell cracked?")'
    ) in text
    assert '- Cassia whispered to you (round 4: "one two three four five six seven eight nine '
    assert 'ten eleven twelve…")' in text and "13" not in text
    assert "one block per whisperer: 'WHISPER to Thorin:' 'WHISPER to Cassia:'" in text
    assert text.index("Thorin whispered") < text.index("Cassia whispered")


def test_the_answer_step_without_whisper_texts_still_names_the_whisperers():
    text = step_instruction(Step(ANSWER, "DM", "dm", 2, whisperers=("Thorin",)))
    assert "- Thorin whispered to you\n" in text and "'WHISPER to Thorin:'" in text


def test_the_repair_request_quotes_the_answer_with_the_steps_format_and_no_memory_tool():
    text = repair_instruction(THORIN_ACTS, "  I look around. " + "x" * 3000, limit=100)
    assert "your turn, Thorin" in text and PLAYER_FORMAT.format(dm="DM") in text
    assert "had no labelled blocks" in text and "<<<\nI look around. " in text
    assert "x" * 80 in text and "x" * 100 not in text and "[…]" in text
    assert MEMORY_TOOL not in text
