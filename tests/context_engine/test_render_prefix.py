"""The cache-stable prefix: what providers can reuse between an agent's calls."""

from __future__ import annotations

from context_engine.llm import prefix_fingerprints, prompt_bytes, stable_share
from context_engine.pack import build_pack
from context_engine.render import frozen_prefix, to_openai_messages
from tests.context_engine.helpers import Log, config, digest, pack_input, section


def pack_after(rounds: int, *, digest_text: str = "Hinge Index: none yet."):
    log = Log()
    for number in range(1, rounds + 1):
        log.add(number, "DM", "narrative", f"Round {number}: the bridge sways.")
        log.add(number, "Thorin", "action", f"I cross slowly ({number}).")
    return build_pack(
        pack_input(
            "Thorin", log, digest=digest(digest_text), input_text="Do you jump?", config=config()
        )
    )


def test_the_frozen_prefix_opens_the_first_message_which_is_the_system_message():
    pack = pack_after(2)
    messages = to_openai_messages(pack)
    prefix = frozen_prefix(pack)
    assert messages[0]["role"] == "system"
    assert prefix and messages[0]["content"].startswith(prefix)
    for name in ("identity", "rules", "frozen"):
        assert section(pack, name).text in prefix
    assert section(pack, "digest").text not in prefix


def test_the_stable_sections_come_before_everything_that_changes_each_round():
    """OpenAI-compatible servers cache the longest prefix they saw: the order must put
    system (stable first), then the transcript, then the input — nothing volatile first."""
    messages = to_openai_messages(pack_after(2))
    assert [m["role"] for m in messages] == ["system", "user", "user"]
    assert "Round 2" not in messages[0]["content"]
    assert "Round 2" in messages[1]["content"]
    assert messages[-1]["content"].endswith("Do you jump?")


def test_a_new_round_keeps_the_frozen_prefix_byte_identical():
    before, after = pack_after(2), pack_after(3, digest_text="Hinge Index: the bridge.")
    assert frozen_prefix(before) == frozen_prefix(after)
    old = prompt_bytes(to_openai_messages(before))
    new = prompt_bytes(to_openai_messages(after))
    share = stable_share(prefix_fingerprints(old), prefix_fingerprints(new), len(new))
    # At least the frozen prefix (to one 64-byte block) is shared.
    assert share is not None
    assert share * len(new) >= len(frozen_prefix(after).encode()) - 64
