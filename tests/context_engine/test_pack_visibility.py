"""Fog of war inside packs (SPEC §4): what each role's pack may and may not contain."""

from __future__ import annotations

from dataclasses import replace

import pytest

from context_engine.candidates import UnknownRoleError
from context_engine.pack import build_pack
from context_engine.types import STRATEGIES
from tests.context_engine.helpers import (
    Log,
    config,
    digest,
    field,
    lore,
    pack_input,
    section,
    text,
    world,
)


def whisper_log() -> Log:
    log = Log()
    log.add(1, "DM", "narrative", "Rain over the harbour.")
    log.add(
        1,
        "Cassia",
        "whisper",
        "WHISPERMARK the duke hides in the crypt",
        visibility=["Cassia", "DM"],
        tags=("thread:crypt",),
    )
    log.add(1, "DM", "gm_note", "GMNOTEMARK the crypt is trapped", visibility=["DM"])
    log.add(1, "Thorin", "monologue", "THORINTHOUGHT I must hide the poison", visibility=["Thorin"])
    log.add(1, "Thorin", "action", "I buy a lantern.")
    return log


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_whisper_never_reaches_a_third_player(strategy):
    pack = build_pack(pack_input("Thorin", whisper_log(), config=config(strategy=strategy)))
    assert "WHISPERMARK" not in text(pack)
    assert "I buy a lantern." in text(pack)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_whisper_reaches_its_sender_and_its_recipient(strategy):
    for role in ("Cassia", "DM"):
        pack = build_pack(pack_input(role, whisper_log(), config=config(strategy=strategy)))
        assert "WHISPERMARK" in text(pack), role


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_gm_notes_reach_the_dm_and_no_player(strategy):
    cfg = config(strategy=strategy)
    assert "GMNOTEMARK" in text(build_pack(pack_input("DM", whisper_log(), config=cfg)))
    for role in ("Thorin", "Cassia"):
        assert "GMNOTEMARK" not in text(build_pack(pack_input(role, whisper_log(), config=cfg)))


def test_the_dm_does_not_read_a_players_monologue_even_if_its_visibility_names_the_dm():
    log = whisper_log()
    log.add(
        2,
        "Thorin",
        "monologue",
        "LEAKYTHOUGHT stored with a wrong audience",
        visibility=["Thorin", "DM"],
    )
    dm_pack = build_pack(pack_input("DM", log))
    assert "THORINTHOUGHT" not in text(dm_pack)
    assert "LEAKYTHOUGHT" not in text(dm_pack)
    assert "LEAKYTHOUGHT" in text(build_pack(pack_input("Thorin", log)))


def test_a_judge_reads_every_turn_monologue_and_secret():
    pack = build_pack(pack_input("Arbiter", whisper_log()))
    body = text(pack)
    for marker in ("WHISPERMARK", "GMNOTEMARK", "THORINTHOUGHT"):
        assert marker in body
    for secret in ("The duke is a lich.", "You poisoned Lord Vane.", "You serve the Grey Court."):
        assert secret in body


def test_an_empty_audience_is_readable_by_judges_only():
    log = Log()
    log.add(1, "DM", "narrative", "NOBODYMARK derived from disjoint sources", visibility=())
    log.add(1, "DM", "narrative", "Public line.")
    assert "NOBODYMARK" not in text(build_pack(pack_input("DM", log)))
    assert "NOBODYMARK" not in text(build_pack(pack_input("Thorin", log)))
    assert "NOBODYMARK" in text(build_pack(pack_input("Arbiter", log)))


def test_private_turns_of_others_do_not_use_up_the_window():
    log = Log()
    for i in range(6):
        log.add(1, "Thorin", "action", f"Public step {i}.")
    for i in range(20):
        log.add(1, "Cassia", "whisper", f"Secret {i}", visibility=["Cassia", "DM"])
    pack = build_pack(
        pack_input("Thorin", log, config=config(strategy="sliding_window", window_turns=6))
    )
    recent = section(pack, "recent").text
    for i in range(6):
        assert f"Public step {i}." in recent


def test_only_the_last_two_own_monologues_are_raw_and_older_ones_use_the_strategic_summary():
    log = Log()
    thoughts = [
        log.add(r, "Thorin", "monologue", f"THOUGHT{r} plan", visibility=["Thorin"])
        for r in range(1, 5)
    ]
    summary = digest("STRATEGYMARK keep Vane's death hidden", audience=("Thorin",))
    pack = build_pack(pack_input("Thorin", log, strategic_summary=summary))
    body = text(pack)
    assert "THOUGHT3" in body and "THOUGHT4" in body
    assert "THOUGHT1" not in body and "THOUGHT2" not in body
    assert "STRATEGYMARK" in section(pack, "digest").text
    logged = {(e.ref, e.action) for e in pack.trim_log}
    assert (f"turn:{thoughts[0].id}", "summarised") in logged
    assert (f"turn:{thoughts[1].id}", "summarised") in logged


def test_older_monologues_are_dropped_and_logged_when_there_is_no_strategic_summary():
    log = Log()
    first = log.add(1, "Thorin", "monologue", "OLDTHOUGHT", visibility=["Thorin"])
    log.add(2, "Thorin", "monologue", "MIDTHOUGHT", visibility=["Thorin"])
    log.add(3, "Thorin", "monologue", "NEWTHOUGHT", visibility=["Thorin"])
    pack = build_pack(pack_input("Thorin", log))
    assert "OLDTHOUGHT" not in text(pack)
    event = next(e for e in pack.trim_log if e.ref == f"turn:{first.id}")
    assert event.action == "dropped" and "strategic summary" in event.reason


def test_a_strategic_summary_the_role_cannot_read_is_not_shown():
    log = Log()
    log.add(1, "Thorin", "action", "I wait.")
    other = digest("CASSIAPLAN take the crown", audience=("Cassia",))
    pack = build_pack(pack_input("Thorin", log, strategic_summary=other))
    assert "CASSIAPLAN" not in text(pack)


def test_a_digest_for_another_audience_is_not_used():
    log = Log()
    log.add(1, "Thorin", "action", "I wait.")
    dm_digest = digest("DMDIGEST the duke is the culprit", audience=("DM",))
    assert "DMDIGEST" not in text(build_pack(pack_input("Thorin", log, digest=dm_digest)))
    assert "DMDIGEST" in text(build_pack(pack_input("DM", log, digest=dm_digest)))


def test_whisper_existence_shows_a_content_free_stub_when_enabled():
    log = whisper_log()
    on = build_pack(pack_input("Thorin", log, config=config(show_whisper_existence=True)))
    off = build_pack(pack_input("Thorin", log))
    recent_on = section(on, "recent").text
    assert "[R1] Cassia whispered to DM." in recent_on
    assert "WHISPERMARK" not in text(on) and "thread:crypt" not in text(on)
    assert "whispered" not in section(off, "recent").text
    assert "GMNOTEMARK" not in text(on)  # GM notes are not whispers: no stub either


def test_secrets_stay_hidden_until_after_their_reveal_round():
    log = Log()
    log.add(6, "DM", "narrative", "The masks come off.")
    at_reveal = build_pack(pack_input("Thorin", log, current_round=6))
    after = build_pack(pack_input("Thorin", log, current_round=7))
    assert "You serve the Grey Court." not in text(at_reveal)
    assert "You serve the Grey Court." in section(after, "frozen").text
    assert "The duke is a lich." not in text(after)  # never revealed
    own = section(after, "identity").text
    assert "You poisoned Lord Vane." in own


def test_lore_is_filtered_by_audience_status_and_story_time():
    log = Log()
    log.add(5, "DM", "narrative", "Nothing happens.")
    entries = (
        lore(1, "Ember-glass", "PUBLICLORE glass that holds fire"),
        lore(2, "Crypt key", "DMLORE opens the crypt", audience=("DM",)),
        lore(3, "Grey Court", "REJECTEDLORE a fake", status="rejected"),
        lore(4, "Lord Vane", "DEADLORE alive and well", invalid_from_round=5),
        lore(5, "Ashfern tonic", "PROPOSEDLORE a bitter cure", status="proposed"),
        lore(6, "Night gate", "FUTURELORE opens later", valid_from_round=9),
    )
    pack = build_pack(pack_input("Thorin", log, lore=entries))
    frozen = section(pack, "frozen").text
    assert "PUBLICLORE" in frozen
    assert "- Ashfern tonic (term, unconfirmed): PROPOSEDLORE" in frozen
    for hidden in ("DMLORE", "REJECTEDLORE", "DEADLORE", "FUTURELORE", "Crypt key"):
        assert hidden not in text(pack)
    assert "DMLORE" in text(build_pack(pack_input("DM", log, lore=entries)))


def test_state_fields_with_a_private_audience_reach_only_that_audience():
    log = Log()
    log.add(3, "DM", "narrative", "Dawn.")
    ws = world(field("gate", "open", 3), field("traitor", "STATEMARK Cassia", 3, audience=("DM",)))
    assert "STATEMARK" not in text(build_pack(pack_input("Thorin", log, world_state=ws)))
    assert "STATEMARK" in text(build_pack(pack_input("DM", log, world_state=ws)))


def test_search_hits_the_role_cannot_read_are_ignored():
    log = Log()
    log.add(9, "Thorin", "action", "Where did we hide the ember-glass?")
    hidden = replace(
        log.add(1, "DM", "gm_note", "SEARCHLEAK ember-glass under the altar", visibility=["DM"]),
        id=999,
        seq=0,
    )
    inp = pack_input("Thorin", log, retrieval_turns=(hidden,), input_text="ember-glass altar")
    assert "SEARCHLEAK" not in text(build_pack(inp))


def test_an_unknown_role_is_an_error_naming_it():
    with pytest.raises(UnknownRoleError, match="Mallory"):
        build_pack(pack_input("Mallory", whisper_log()))
