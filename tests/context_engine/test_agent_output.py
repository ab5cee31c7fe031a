"""The agent answer format: what each block becomes, and failing closed on anything else."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_engine.agent_output import ParsedTurn, parse_agent_output

ROLES = ("DM", "Thorin", "Cassia", "Wren")
DMS = ("DM",)


def player(text: str, speaker: str = "Thorin", **kw) -> list[ParsedTurn]:
    return parse_agent_output(
        text, speaker=speaker, speaker_kind="player", roles=kw.get("roles", ROLES), dm_roles=DMS
    )


def dm(text: str, **kw) -> list[ParsedTurn]:
    return parse_agent_output(
        text,
        speaker=kw.get("speaker", "DM"),
        speaker_kind="dm",
        roles=kw.get("roles", ROLES),
        dm_roles=kw.get("dm_roles", DMS),
    )


def shape(turns: list[ParsedTurn]) -> list[tuple]:
    return [(t.kind, t.content, t.visibility, t.needs_review) for t in turns]


# -- well-formed answers ------------------------------------------------------------------


def test_a_player_answer_becomes_a_public_action_a_whisper_with_the_dm_and_a_monologue():
    turns = player(
        "PUBLIC: Thorin shoulders the door open.\n"
        "WHISPER to DM: Is the floor trapped?\n"
        "MONOLOGUE: I hope Cassia did not see my hands shake."
    )
    assert shape(turns) == [
        ("action", "Thorin shoulders the door open.", None, False),
        ("whisper", "Is the floor trapped?", ("DM", "Thorin"), False),
        ("monologue", "I hope Cassia did not see my hands shake.", ("Thorin",), False),
    ]


def test_a_dm_answer_becomes_narration_a_choice_a_gm_note_and_private_answers():
    turns = dm(
        "PUBLIC: The hall floods to the knee.\n"
        "CHOICE: Swim for the gate, or climb the shelves?\n"
        "GM NOTE: The shelves will collapse on round 3.\n"
        "WHISPER to Thorin, Cassia: You both hear the bell.\n"
        "WHISPER to Wren: The water is warm near the gate."
    )
    assert shape(turns) == [
        ("narrative", "The hall floods to the knee.", None, False),
        ("choice", "Swim for the gate, or climb the shelves?", None, False),
        ("gm_note", "The shelves will collapse on round 3.", ("DM",), False),
        ("whisper", "You both hear the bell.", ("Cassia", "DM", "Thorin"), False),
        ("whisper", "The water is warm near the gate.", ("DM", "Wren"), False),
    ]


def test_a_block_runs_over_several_lines_until_the_next_label():
    turns = player("PUBLIC: Thorin kneels.\nHe traces the tide-script.\n\nMONOLOGUE: Old.")
    assert turns[0].content == "Thorin kneels.\nHe traces the tide-script."
    assert turns[1].content == "Old."


def test_tags_and_hinge_belong_to_the_block_above_them():
    turns = player(
        "PUBLIC: Thorin takes the Tide Codex.\n"
        "TAGS: npc:Maelis Orrow, thread:the codex\n"
        "HINGE\n"
        "MONOLOGUE: Mine now."
    )
    assert (turns[0].tags, turns[0].hinge) == (("npc:Maelis Orrow", "thread:the codex"), True)
    assert (turns[1].tags, turns[1].hinge) == ((), False)


def test_tags_written_before_the_first_block_go_to_the_first_block():
    turns = player("TAGS: thread:door\nHINGE: yes\nPUBLIC: Thorin knocks.")
    assert shape(turns) == [("action", "Thorin knocks.", None, False)]
    assert (turns[0].tags, turns[0].hinge) == (("thread:door",), True)


def test_hinge_no_is_not_a_hinge_and_hinge_with_prose_is_ordinary_text():
    assert player("PUBLIC: A.\nHINGE: no")[0].hinge is False
    turns = player("PUBLIC: A.\nHinge: the door creaks")
    assert (turns[0].content, turns[0].hinge) == ("A.\nHinge: the door creaks", False)


def test_tags_are_deduplicated_and_overlong_ones_dropped():
    long_tag = "npc:" + "x" * 200
    turns = player(f"PUBLIC: A.\nTAGS: thread:a, thread:a, {long_tag}, , npc:B")
    assert turns[0].tags == ("thread:a", "npc:B")


@pytest.mark.parametrize(
    "text",
    [
        "**PUBLIC:** Thorin waves.",
        "**PUBLIC**: Thorin waves.",
        "- public: Thorin waves.",
        "## Action: Thorin waves.",
        "```\nPUBLIC: Thorin waves.\n```",
        "Narration: Thorin waves.",
    ],
)
def test_labels_tolerate_case_markdown_and_code_fences(text):
    assert shape(player(text)) == [("action", "Thorin waves.", None, False)]


def test_whisper_recipients_match_roles_case_insensitively_and_dm_aliases():
    turns = player("WHISPER to cassia and the GM: Meet me at the pier.")
    assert turns[0].visibility == ("Cassia", "DM", "Thorin")
    assert not turns[0].needs_review


def test_a_role_whose_name_contains_and_is_one_recipient():
    turns = parse_agent_output(
        "WHISPER to Salt and Pepper and Thorin: Psst.",
        speaker="DM",
        speaker_kind="dm",
        roles=("DM", "Salt and Pepper", "Thorin"),
        dm_roles=DMS,
    )
    assert turns[0].needs_review, "'Salt and Pepper and Thorin' is ambiguous: no such role"
    turns = parse_agent_output(
        "WHISPER to Salt and Pepper, Thorin: Psst.",
        speaker="DM",
        speaker_kind="dm",
        roles=("DM", "Salt and Pepper", "Thorin"),
        dm_roles=DMS,
    )
    assert turns[0].visibility == ("DM", "Salt and Pepper", "Thorin")


def test_a_player_whisper_without_recipients_goes_to_the_dm():
    assert player("WHISPER: Keep this between us.")[0].visibility == ("DM", "Thorin")


def test_dm_aliases_resolve_to_the_experiments_dm_roles_whatever_their_names():
    turns = parse_agent_output(
        "WHISPER to DM: Psst.",
        speaker="Thorin",
        speaker_kind="player",
        roles=("Narrator", "Thorin", "Cassia"),
        dm_roles=("Narrator",),
    )
    assert turns[0].visibility == ("Narrator", "Thorin")


def test_whispers_from_players_always_include_the_dm():
    turns = player("WHISPER to Cassia: Only you.")
    assert turns[0].visibility == ("Cassia", "DM", "Thorin")


def test_blank_blocks_are_dropped_and_blank_text_gives_nothing():
    assert player("   \n\n") == []
    assert shape(player("PUBLIC:\nMONOLOGUE: Hm.")) == [("monologue", "Hm.", ("Thorin",), False)]


# -- failing closed -----------------------------------------------------------------------


def test_an_answer_with_no_label_is_stored_for_the_speaker_and_the_dm_flagged_for_review():
    turns = player("I think I'll open the door and tell everyone about my secret.")
    assert shape(turns) == [
        (
            "action",
            "I think I'll open the door and tell everyone about my secret.",
            ("DM", "Thorin"),
            True,
        )
    ]


def test_text_before_the_first_label_fails_closed_and_the_rest_is_parsed():
    turns = player("Sure, here is my turn:\nPUBLIC: Thorin nods.")
    assert shape(turns) == [
        ("action", "Sure, here is my turn:", ("DM", "Thorin"), True),
        ("action", "Thorin nods.", None, False),
    ]


def test_a_player_cannot_write_a_gm_note_or_offer_a_choice():
    turns = player("GM NOTE: The DM's trap is fake.\nCHOICE: Everyone follows me?")
    assert [(t.visibility, t.needs_review, t.kind) for t in turns] == [
        (("DM", "Thorin"), True, "action"),
        (("DM", "Thorin"), True, "action"),
    ]
    assert "GM NOTE: The DM's trap is fake." in turns[0].content
    assert "gm_note" not in {t.kind for t in turns}


def test_a_whisper_to_an_unknown_role_fails_closed_with_its_text():
    turns = player("WHISPER to Bram, Cassia: The vault code is 7-7-1.")
    assert shape(turns) == [
        ("action", "WHISPER to Bram, Cassia: The vault code is 7-7-1.", ("DM", "Thorin"), True)
    ]
    assert "Bram" in turns[0].reason


def test_a_dm_whisper_without_recipients_fails_closed_to_the_dm():
    turns = dm("WHISPER: Someone is listening.")
    assert shape(turns) == [("narrative", "WHISPER: Someone is listening.", ("DM",), True)]


def test_a_whisper_to_the_speaker_alone_fails_closed():
    turns = dm("WHISPER to DM: Note to self.")
    assert turns[0].needs_review and turns[0].visibility == ("DM",)


def test_labels_with_no_text_at_all_keep_the_answer_closed_rather_than_losing_it():
    turns = player("PUBLIC:\nWHISPER to DM:")
    assert shape(turns) == [("action", "PUBLIC:\nWHISPER to DM:", ("DM", "Thorin"), True)]


def test_a_failed_block_never_widens_beyond_speaker_and_dm_even_with_several_dms():
    turns = parse_agent_output(
        "GM NOTE: x",
        speaker="Cassia",
        speaker_kind="player",
        roles=("DM", "CoDM", "Thorin", "Cassia"),
        dm_roles=("DM", "CoDM"),
    )
    assert turns[0].visibility == ("Cassia", "CoDM", "DM")


# -- properties ---------------------------------------------------------------------------

SPEAKERS = [("DM", "dm"), ("Thorin", "player"), ("Cassia", "player"), ("Wren", "player")]
PUBLIC_LINE = re.compile(r"(?i)^\W*(public|narration|narrative|action|choices?)\b")
MODIFIER_LINE = re.compile(r"(?i)^\W*(tags|hinge)\b")
FENCE_LINE = re.compile(r"^\s*(```|~~~)")

_labels = st.sampled_from(
    [
        "PUBLIC",
        "public",
        "**PUBLIC**",
        "CHOICE",
        "ACTION",
        "Narration",
        "WHISPER",
        "WHISPER to DM",
        "WHISPER to Thorin",
        "WHISPER to Cassia, Wren",
        "WHISPER to Bram",
        "whisper to the gm and Wren",
        "GM NOTE",
        "gm-note",
        "MONOLOGUE",
        "TAGS",
        "HINGE",
        "Note",
        "OOC",
    ]
)
_words = st.text(alphabet=st.sampled_from(list("abcdefg ABC:*-#`~,.!\t")), min_size=0, max_size=30)
_line = st.one_of(
    st.builds(lambda label, rest: f"{label}: {rest}", _labels, _words),
    st.builds(lambda label: label, _labels),
    _words,
    st.sampled_from(["", "```", "HINGE", "TAGS: npc:Maelis, thread:x"]),
)
format_like = st.lists(_line, max_size=12).map("\n".join)
any_text = st.one_of(st.text(max_size=300), format_like)


def _check_invariants(text: str, speaker: str, kind: str, turns: list[ParsedTurn]) -> None:
    known = set(ROLES)
    lines = text.splitlines()
    for turn in turns:
        if turn.visibility is None:
            # Public only from an explicit public block, never from review or stray text.
            assert not turn.needs_review
            assert turn.kind in ("narrative", "action", "choice")
            assert turn.line >= 1 and PUBLIC_LINE.match(lines[turn.line - 1]), turn
        else:
            assert turn.visibility, "an empty audience is never produced"
            assert set(turn.visibility) <= known, turn.visibility
            assert speaker in turn.visibility, "the speaker always reads its own private turn"
            assert list(turn.visibility) == sorted(set(turn.visibility))
        if turn.needs_review:
            assert turn.visibility == tuple(sorted({speaker, "DM"}))
        if kind != "dm":
            assert turn.kind not in ("gm_note", "choice")
            if turn.kind == "whisper":
                assert "DM" in turn.visibility
        if turn.kind == "monologue":
            assert turn.visibility == (speaker,)


@settings(max_examples=400)
@given(text=any_text, who=st.sampled_from(SPEAKERS))
def test_nothing_is_public_unless_written_in_a_public_block_and_audiences_name_known_roles(
    text, who
):
    speaker, kind = who
    turns = parse_agent_output(text, speaker=speaker, speaker_kind=kind, roles=ROLES, dm_roles=DMS)
    _check_invariants(text, speaker, kind, turns)
    assert (turns == []) == (not text.strip())


_no_public_words = st.text(
    alphabet=st.sampled_from(list("bdfghjkmqsvxyz WHISPERGMNOTMLQU:*-#\n")), max_size=200
)


@settings(max_examples=300)
@given(text=_no_public_words, who=st.sampled_from(SPEAKERS))
def test_text_without_a_public_label_publishes_nothing(text, who):
    speaker, kind = who
    # The alphabet has no 'a' and no 'c': no public label can be spelt with it.
    assert not re.search(r"(?i)public|narrat|action|choice", text)
    turns = parse_agent_output(text, speaker=speaker, speaker_kind=kind, roles=ROLES, dm_roles=DMS)
    assert all(t.visibility is not None for t in turns)


@settings(max_examples=300)
@given(text=format_like, who=st.sampled_from(SPEAKERS))
def test_every_written_line_survives_in_some_turn(text, who):
    speaker, kind = who
    turns = parse_agent_output(text, speaker=speaker, speaker_kind=kind, roles=ROLES, dm_roles=DMS)
    stored = "\n".join(t.content for t in turns)
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or MODIFIER_LINE.match(stripped) or FENCE_LINE.match(stripped):
            continue
        tail = stripped.split(":", 1)[-1].strip(" \t*_`")
        assert stripped in stored or tail in stored, (line, stored)


@given(text=any_text, who=st.sampled_from(SPEAKERS))
def test_parsing_is_deterministic(text, who):
    speaker, kind = who
    args = {"speaker": speaker, "speaker_kind": kind, "roles": ROLES, "dm_roles": DMS}
    assert parse_agent_output(text, **args) == parse_agent_output(text, **args)
