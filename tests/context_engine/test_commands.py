"""SPEC §5.3 commands as engine operations, and `history_needs` (what the loader loads)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from context_engine.commands import MIN_WINDOW_TURNS, command_cut, history_needs
from context_engine.pack import build_pack
from context_engine.render import pack_to_json
from context_engine.types import STRATEGIES, PackConfig, TurnView
from tests.context_engine.helpers import (
    Log,
    config,
    digest,
    event,
    pack_input,
    section,
    text,
)


def campaign() -> Log:
    log = Log()
    for r in range(1, 5):
        log.add(r, "DM", "narrative", f"Round {r} opens with thunder over the keep. " * 4)
        log.add(r, "Thorin", "action", f"Round {r}: I hold the gate.")
        log.add(r, "Cassia", "action", f"Round {r}: I loose an arrow.")
    return log


def window_refs(pack):
    return [i.ref for i in section(pack, "recent").items if i.kind in ("turn", "anchor")]


def test_checkpoint_moves_covered_turns_out_of_the_window_except_the_minimum_window():
    log = campaign()
    cut_at = log.turns[8].seq  # the last turn of round 3
    memory = digest("Hinge Index: the gate held.", round_to=3)
    pack = build_pack(
        pack_input("Thorin", log, digest=memory, events=(event("checkpoint", cut_at, 3),))
    )
    kept = window_refs(pack)
    after = [f"turn:{t.id}" for t in log.turns if t.seq > cut_at]
    assert kept[-len(after) :] == after
    assert len(kept) == max(len(after), MIN_WINDOW_TURNS)
    covered = [e for e in pack.trim_log if e.action == "summarised" and "checkpoint" in e.reason]
    assert {e.ref for e in covered} == {
        f"turn:{t.id}" for t in log.turns if t.seq <= cut_at and f"turn:{t.id}" not in kept
    }
    assert "Hinge Index: the gate held." in section(pack, "digest").text


def test_the_minimum_window_survives_a_checkpoint_of_everything():
    log = campaign()
    pack = build_pack(pack_input("Thorin", log, events=(event("checkpoint", log.turns[-1].seq),)))
    assert window_refs(pack) == [f"turn:{t.id}" for t in log.turns[-MIN_WINDOW_TURNS:]]


def test_clear_cuts_like_checkpoint_but_logs_the_loss_as_dropped_and_keeps_the_old_digest():
    log = campaign()
    old = digest("Hinge Index: OLDDIGEST", round_to=1)
    seq = log.turns[-1].seq
    cleared = build_pack(pack_input("Thorin", log, digest=old, events=(event("clear", seq),)))
    checkpointed = build_pack(
        pack_input("Thorin", log, digest=old, events=(event("checkpoint", seq),))
    )
    assert window_refs(cleared) == window_refs(checkpointed)
    assert "OLDDIGEST" in section(cleared, "digest").text
    lost = [e for e in cleared.trim_log if "/clear" in e.reason]
    assert lost and all(e.action == "dropped" and "not in the digest" in e.reason for e in lost)


def test_compress_leaves_the_window_unchanged():
    log = campaign()
    plain = build_pack(pack_input("Thorin", log))
    compressed = build_pack(
        pack_input("Thorin", log, events=(event("compress", log.turns[-1].seq),))
    )
    assert window_refs(compressed) == window_refs(plain)
    assert section(compressed, "recent").text == section(plain, "recent").text


def test_the_latest_cut_wins():
    events = (event("checkpoint", 9), event("clear", 4), event("compress", 12))
    cut = command_cut(events)
    assert (cut.command, cut.seq) == ("checkpoint", 9)
    assert command_cut((event("compress", 3),)) is None


def test_a_checkpoint_resets_strain():
    log = campaign()
    for r in range(5, 9):
        log.add(r, "DM", "narrative", f"Round {r}: the siege grinds on and on. " * 12)
    inp = pack_input(
        "Thorin",
        log,
        config=config(
            hot_window_rounds=8,
            budgets={
                name: 130
                for name in (
                    "identity",
                    "rules",
                    "frozen",
                    "state",
                    "digest",
                    "recent",
                    "retrieval",
                    "input",
                )
            },
        ),
    )
    before = build_pack(inp)
    after = build_pack(replace(inp, events=(event("checkpoint", log.turns[-1].seq),)))
    assert before.strain == "strain_3"
    assert after.untrimmed_tokens < before.untrimmed_tokens
    assert after.strain in ("normal", "strain_1")


def test_own_monologues_survive_a_clear():
    log = campaign()
    log.add(4, "Thorin", "monologue", "KEEPTHOUGHT I doubt Cassia.", visibility=["Thorin"])
    for r in (5, 5, 5, 5, 5):
        log.add(r, "DM", "narrative", "Rain.")
    pack = build_pack(pack_input("Thorin", log, events=(event("clear", log.turns[-1].seq),)))
    assert "KEEPTHOUGHT" in text(pack)


def test_history_needs_for_the_default_strategy_never_asks_for_the_full_history():
    needs = history_needs(PackConfig(), current_round=40)
    assert not needs.full
    assert needs.from_round == 37
    assert needs.hinge_from_round == 30
    assert needs.monologue_count == 2
    assert needs.retrieval_candidates > 0
    assert needs.cut_seq is None and needs.unreadable_whispers is False


def test_history_needs_follow_the_strategy_and_the_events():
    assert history_needs(PackConfig(strategy="full_history"), 40).full
    sliding = history_needs(PackConfig(strategy="sliding_window", window_turns=9), 40)
    assert (sliding.full, sliding.last_turns, sliding.from_round) == (False, 9, None)
    assert history_needs(PackConfig(strategy="triage"), 40).last_turns == 10
    assert history_needs(PackConfig(hinge_quota=0), 40).hinge_from_round is None
    assert history_needs(PackConfig(), 40, (event("clear", 77),)).cut_seq == 77
    assert history_needs(PackConfig(show_whisper_existence=True), 40).unreadable_whispers
    with pytest.raises(ValueError, match="bogus"):
        history_needs(PackConfig(strategy="bogus"), 40)


def load(turns: tuple[TurnView, ...], role: str, needs, readable) -> tuple[TurnView, ...]:
    """A reference loader: exactly what `HistoryNeeds` promises, nothing more."""
    if needs.full:
        return turns
    visible = [t for t in turns if readable(t)]
    chosen = set()
    for t in visible:
        if needs.from_round is not None and t.round >= needs.from_round:
            chosen.add(t.id)
        if needs.hinge_from_round is not None and t.hinge and t.round >= needs.hinge_from_round:
            chosen.add(t.id)
    own = [t for t in visible if t.kind == "monologue" and t.speaker == role]
    if needs.last_turns:
        transcript = [t for t in visible if t not in own]
        chosen |= {t.id for t in transcript[-needs.last_turns :]}
    chosen |= {t.id for t in own[-needs.monologue_count :]} if needs.monologue_count else set()
    return tuple(t for t in turns if t.id in chosen)


@pytest.mark.parametrize("strategy", [s for s in STRATEGIES if s != "full_history"])
def test_loading_only_what_history_needs_asks_for_builds_the_same_pack(strategy):
    from context_engine.candidates import readable_turn

    log = Log()
    for r in range(1, 31):
        log.add(r, "DM", "narrative", f"Round {r}: the caravan moves on.", hinge=r % 7 == 0)
        log.add(r, "Thorin", "action", f"Round {r}: I guard the rear.")
        log.add(r, "Cassia", "whisper", f"Round {r}: psst", visibility=["Cassia", "DM"])
        log.add(r, "Thorin", "monologue", f"Round {r}: thinking", visibility=["Thorin"])
    for lend in (False, True):
        cfg = config(strategy=strategy, retrieval_preset="minimal", lend_unused_budget=lend)
        full = pack_input("Thorin", log, config=cfg, input_text="nothing matches xyzzy")
        needs = history_needs(cfg, full.current_round)
        loaded = load(full.turns, "Thorin", needs, lambda t: readable_turn(t, "Thorin", False))
        if not lend:  # lending reaches back further (the newest turns lent room may hold)
            assert len(loaded) < len(full.turns) / 3
        assert len(loaded) < len(full.turns)
        a = build_pack(full)
        b = build_pack(replace(full, turns=loaded))
        assert [s.text for s in a.sections] == [s.text for s in b.sections]
        assert pack_to_json(a) == pack_to_json(b)
