"""The relay's engine side: step instructions fit the input budget, and the offline agent
answers deterministically, in the format, with nothing private copied into it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from context_engine import tokens
from context_engine.agent_output import parse_agent_output
from context_engine.pack import build_pack
from context_engine.relay import (
    ACT,
    ANSWER,
    HESITATE,
    NARRATE,
    OfflineAgent,
    Step,
    step_instruction,
)
from context_engine.types import DEFAULT_BUDGETS
from tests.context_engine.helpers import Log, pack_input, section

ROLES = ("DM", "Thorin", "Cassia", "Arbiter")
PRIVATE_MARKERS = ("lich", "poisoned", "Grey Court", "ZEBRA-SECRET")


def campaign_log() -> Log:
    log = Log()
    log.add(1, "DM", "narrative", "Smoke rises over Ashfall.")
    log.add(1, "DM", "gm_note", "ZEBRA-SECRET: the mayor lit the fire.", visibility=["DM"])
    log.add(1, "Thorin", "action", "Thorin sniffs the ash.")
    log.add(1, "Thorin", "whisper", "ZEBRA-SECRET whisper.", visibility=["DM", "Thorin"])
    return log


def steps() -> list[Step]:
    return [
        Step(NARRATE, "DM", "dm", 2, players=("Thorin", "Cassia")),
        Step(ACT, "Thorin", "player", 2),
        Step(ACT, "Cassia", "player", 2),
        Step(ANSWER, "DM", "dm", 2, whisperers=("Thorin",)),
        Step(HESITATE, "DM", "dm", 2, players=("Thorin", "Cassia"), absent="Cassia"),
    ]


def pack_for(step: Step, log: Log | None = None):
    log = log or campaign_log()
    return build_pack(pack_input(step.role, log, input_text=step_instruction(step)))


@pytest.mark.parametrize("step", steps(), ids=lambda s: f"{s.kind}-{s.role}")
def test_each_instruction_fits_the_input_budget_and_reaches_the_pack_untrimmed(step):
    instruction = step_instruction(step)
    assert tokens.count(instruction) < DEFAULT_BUDGETS["input"] * 0.8
    pack = pack_for(step)
    assert instruction in section(pack, "input").text
    assert not section(pack, "input").trimmed


def test_instructions_name_the_step_and_only_dms_are_told_about_gm_notes():
    narrate, thorin, _, answer, _ = steps()
    assert "Round 2 begins" in step_instruction(narrate)
    assert "Thorin, Cassia" in step_instruction(narrate)
    assert "your turn, Thorin" in step_instruction(thorin)
    assert "GM NOTE" not in step_instruction(thorin)
    assert "GM NOTE" in step_instruction(narrate)
    assert "Thorin whispered to you" in step_instruction(answer)


@pytest.mark.parametrize("step", steps(), ids=lambda s: f"{s.kind}-{s.role}")
def test_the_offline_agent_answers_in_the_format_with_nothing_for_review(step):
    text = OfflineAgent().respond(pack_for(step), step)
    turns = parse_agent_output(
        text, speaker=step.role, speaker_kind=step.speaker_kind, roles=ROLES, dm_roles=("DM",)
    )
    assert turns, text
    assert not [t for t in turns if t.needs_review], text
    public = [t for t in turns if t.visibility is None]
    if step.kind == ANSWER:
        assert public == []
        whispers = [t for t in turns if t.kind == "whisper"]
        assert [t.visibility for t in whispers] == [("DM", "Thorin")]
    else:
        assert public, "narration and actions are public"


def test_offline_players_whisper_to_the_dm_and_keep_a_monologue():
    step = steps()[1]
    turns = parse_agent_output(
        OfflineAgent().respond(pack_for(step), step),
        speaker="Thorin",
        speaker_kind="player",
        roles=ROLES,
        dm_roles=("DM",),
    )
    assert [(t.kind, t.visibility) for t in turns] == [
        ("action", None),
        ("whisper", ("DM", "Thorin")),
        ("monologue", ("Thorin",)),
    ]


@pytest.mark.parametrize("step", steps(), ids=lambda s: f"{s.kind}-{s.role}")
def test_the_offline_agent_never_repeats_private_text_from_its_pack(step):
    pack = pack_for(step)
    assert any(m in "\n".join(s.text for s in pack.sections) for m in PRIVATE_MARKERS)
    answer = OfflineAgent().respond(pack, step)
    for marker in PRIVATE_MARKERS:
        assert marker not in answer


def test_the_offline_agent_is_deterministic_and_follows_its_pack():
    step = steps()[0]
    first = OfflineAgent().respond(pack_for(step), step)
    assert first == OfflineAgent().respond(pack_for(step), step)
    # Different packs (the campaign moved on) give different answers for some history.
    answers = set()
    log = campaign_log()
    for n in range(8):
        log.add(1, "Cassia", "action", f"Cassia counts {n} embers.")
        answers.add(OfflineAgent().respond(pack_for(step, log), step))
    assert len(answers) > 1


def test_round_number_and_cast_appear_in_the_offline_narration():
    step = replace(steps()[0], round=7)
    text = OfflineAgent().respond(pack_for(step), step)
    assert text.startswith("PUBLIC: Round 7.")
    assert "CHOICE: Thorin, Cassia:" in text


def test_an_unknown_step_kind_is_refused():
    with pytest.raises(ValueError, match="Unknown step kind"):
        step_instruction(Step("dance", "DM", "dm", 1))


def test_the_dm_narrates_a_hesitation_publicly_and_does_not_act_for_the_human():
    step = Step(HESITATE, "DM", "dm", 3, players=("Thorin", "Cassia"), absent="Cassia")
    instruction = step_instruction(step)
    assert "Cassia hesitates" in instruction and "do not act or speak for Cassia" in instruction
    assert step.label == "DM narrating Cassia's hesitation…"
    parsed = parse_agent_output(
        OfflineAgent().respond(pack_for(step), step),
        speaker="DM",
        speaker_kind="dm",
        roles=ROLES,
        dm_roles=("DM",),
    )
    assert [(t.kind, t.visibility) for t in parsed] == [("narrative", None)]
    assert parsed[0].content.startswith("Cassia hesitates")
