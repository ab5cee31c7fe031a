"""SPEC §5.9 and §8: messages for both backends, the API dict, JSON and /context debug."""

from __future__ import annotations

import json

from context_engine.pack import build_pack
from context_engine.render import (
    pack_to_dict,
    pack_to_json,
    render_debug,
    to_genai,
    to_openai_messages,
)
from tests.context_engine.helpers import Log, config, digest, pack_input, section


def sample_pack(**cfg):
    log = Log()
    log.add(1, "DM", "narrative", "The bridge sways.")
    log.add(1, "Thorin", "action", "I cross slowly.")
    for i in range(12):
        log.add(1, "DM", "system", f"Tick {i}.")
    return build_pack(
        pack_input(
            "Thorin",
            log,
            digest=digest("Hinge Index: none yet."),
            input_text="Do you jump?",
            config=config(**cfg),
        )
    )


def test_openai_messages_put_stable_sections_in_system_then_context_then_input():
    pack = sample_pack()
    messages = to_openai_messages(pack)
    assert [m["role"] for m in messages] == ["system", "user", "user"]
    system = messages[0]["content"]
    for name in ("identity", "rules", "frozen", "digest"):
        assert section(pack, name).text in system
    assert section(pack, "recent").text in messages[1]["content"]
    assert messages[2]["content"] == section(pack, "input").text
    assert system.index("## Identity") < system.index("## Rules") < system.index("## World")


def test_genai_gets_the_same_text_as_system_instruction_and_user_contents():
    pack = sample_pack()
    system_instruction, contents = to_genai(pack)
    messages = to_openai_messages(pack)
    assert system_instruction == messages[0]["content"]
    assert contents == [
        {
            "role": "user",
            "parts": [{"text": messages[1]["content"]}, {"text": messages[2]["content"]}],
        }
    ]


def test_pack_to_dict_has_exactly_the_api_shape():
    pack = sample_pack()
    data = pack_to_dict(pack)
    assert list(data) == [
        "role",
        "strategy",
        "budget",
        "total_tokens",
        "pressure",
        "strain",
        "sections",
        "messages",
    ]
    assert data["budget"] == 13000 and isinstance(data["budget"], int)
    assert data["total_tokens"] == sum(s["tokens"] for s in data["sections"])
    assert list(data["sections"][0]) == ["name", "budget", "borrowed", "tokens", "text", "trimmed"]
    assert data["messages"] == to_openai_messages(pack)


def test_pack_json_is_stable_and_round_trips():
    first = pack_to_json(sample_pack(), debug=True)
    second = pack_to_json(sample_pack(), debug=True)
    assert first == second and first.endswith("\n")
    data = json.loads(first)
    assert data["trim_log"] == [] and data["warnings"] == []  # nothing cut, nothing lent
    assert data["total_tokens"] <= data["budget"]


def test_context_debug_lists_sizes_tier_and_the_trim_log():
    pack = sample_pack(budgets={"recent": 40}, lend_unused_budget=False)
    report = render_debug(pack)
    assert f"tokens {pack.total_tokens} / budget {pack.budget}" in report
    assert f"strain {pack.strain}" in report
    for s in pack.sections:
        lent = f"+{s.borrowed}" if s.borrowed else ""
        assert f"{s.name:<10} {s.budget:>7} {lent:>6} {s.tokens:>7}" in report
    dropped = [e for e in pack.trim_log if e.action == "dropped"]
    assert dropped
    for e in dropped:
        assert f"{e.ref}: {e.reason}" in report
    assert "recent     " in report and "yes" in report
