"""A pack's outward forms: chat messages, google-genai contents, the API dict, debug text.

One messages builder serves every backend (SPEC §5.9): OpenAI-compatible servers take
`to_openai_messages` as is; `to_genai` re-shapes the same messages into google-genai's
``system_instruction`` + ``contents`` as plain dicts (the LLM client turns them into SDK
types), so both backends always receive identical text.

Message layout keeps the stable sections first, where a provider's prompt cache can
reuse them: system = identity, rules, frozen, state, digest; then one user message with
the recent transcript and retrieval; then the input as the last user message.
"""

from __future__ import annotations

import json
from typing import Any

from context_engine.types import Pack

SYSTEM_SECTIONS = ("identity", "rules", "frozen", "state", "digest")
# The leading system sections that stay byte-identical between an agent's calls: what an
# explicit provider cache holds. State (it names the round) and digest change each round.
FROZEN_SECTIONS = ("identity", "rules", "frozen")
CONTEXT_SECTIONS = ("recent", "retrieval")
INPUT_SECTION = "input"
EMPTY_TURN = "Continue."  # only if every user-facing section came out empty


def _texts(pack: Pack, names: tuple[str, ...]) -> str:
    by_name = {s.name: s.text for s in pack.sections}
    return "\n\n".join(by_name[name] for name in names if by_name.get(name))


def to_openai_messages(pack: Pack) -> list[dict[str, str]]:
    """OpenAI-style chat messages: system, then context (user), then input (user)."""
    messages: list[dict[str, str]] = []
    system = _texts(pack, SYSTEM_SECTIONS)
    if system:
        messages.append({"role": "system", "content": system})
    context = _texts(pack, CONTEXT_SECTIONS)
    if context:
        messages.append({"role": "user", "content": context})
    user_input = _texts(pack, (INPUT_SECTION,))
    if user_input:
        messages.append({"role": "user", "content": user_input})
    if len(messages) == (1 if system else 0):
        messages.append({"role": "user", "content": EMPTY_TURN})
    return messages


def frozen_prefix(pack: Pack) -> str:
    """The start of the system message that is stable across rounds (identity, rules,
    frozen): `to_openai_messages(pack)[0]["content"]` begins with exactly this text."""
    return _texts(pack, FROZEN_SECTIONS)


def to_genai(pack: Pack) -> tuple[str, list[dict[str, Any]]]:
    """``(system_instruction, contents)`` for google-genai, from the same messages.

    Consecutive messages of one role become one content with several parts (Gemini
    expects user/model turns to alternate); ``assistant`` maps to ``model``.
    """
    system_parts: list[str] = []
    contents: list[dict[str, Any]] = []
    for message in to_openai_messages(pack):
        if message["role"] == "system":
            system_parts.append(message["content"])
            continue
        role = "model" if message["role"] == "assistant" else "user"
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].append({"text": message["content"]})
        else:
            contents.append({"role": role, "parts": [{"text": message["content"]}]})
    return "\n\n".join(system_parts), contents


def pack_to_dict(pack: Pack, *, debug: bool = False) -> dict[str, Any]:
    """The SPEC §8 context shape; ``debug`` adds the trim log, warnings and items."""
    sections = []
    for s in pack.sections:
        entry: dict[str, Any] = {
            "name": s.name,
            "budget": s.budget,
            "borrowed": s.borrowed,
            "tokens": s.tokens,
            "text": s.text,
            "trimmed": s.trimmed,
        }
        if debug:
            entry["items"] = [
                {"kind": item.kind, "ref": item.ref, "tokens": item.tokens} for item in s.items
            ]
        sections.append(entry)
    data: dict[str, Any] = {
        "role": pack.role,
        "strategy": pack.strategy,
        "budget": pack.budget,
        "total_tokens": pack.total_tokens,
        "pressure": round(pack.pressure, 4),
        "strain": pack.strain,
        "sections": sections,
        "messages": to_openai_messages(pack),
    }
    if pack.cap is not None:  # the agent's model window was known
        data["cap"] = {
            "campaign_budget": pack.cap.campaign_budget,
            "budget": pack.cap.budget,
            "capped": pack.cap.capped,
            "window": pack.cap.window,
            "reserve": pack.cap.reserve,
            "margin": pack.cap.margin,
            "source": pack.cap.source,
            "reason": pack.cap.reason,
        }
    if debug:
        data["untrimmed_tokens"] = pack.untrimmed_tokens
        data["trim_log"] = [
            {
                "section": e.section,
                "ref": e.ref,
                "action": e.action,
                "reason": e.reason,
                "tokens_saved": e.tokens_saved,
            }
            for e in pack.trim_log
        ]
        data["warnings"] = list(pack.warnings)
    return data


def pack_to_json(pack: Pack, *, debug: bool = False) -> str:
    """Stable serialisation (fixed key order, UTF-8 text, trailing newline)."""
    return json.dumps(pack_to_dict(pack, debug=debug), ensure_ascii=False, indent=2) + "\n"


def render_debug(pack: Pack) -> str:
    """``/context debug``: per-section sizes, totals, pressure, tier, trim log, warnings."""
    out = [
        f"Context debug: role {pack.role}, strategy {pack.strategy}",
        f"tokens {pack.total_tokens} / budget {pack.budget}; untrimmed {pack.untrimmed_tokens}; "
        f"pressure {pack.pressure:.4f}; strain {pack.strain}",
        "",
        f"{'section':<10} {'budget':>7} {'lent':>6} {'tokens':>7}  {'trimmed':<7}  items",
    ]
    for s in pack.sections:
        flag = "yes" if s.trimmed else "no"
        lent = f"+{s.borrowed}" if s.borrowed else ""
        out.append(f"{s.name:<10} {s.budget:>7} {lent:>6} {s.tokens:>7}  {flag:<7}  {len(s.items)}")
    out.append(f"{'total':<10} {pack.budget:>7} {'':>6} {pack.total_tokens:>7}")
    if pack.cap is not None:
        out.append(f"Budget: {pack.cap.reason}")
    out.append("")
    out.append(f"Trim log ({len(pack.trim_log)}):")
    if not pack.trim_log:
        out.append("  (nothing trimmed)")
    for e in pack.trim_log:
        saved = f" [-{e.tokens_saved}]" if e.tokens_saved else ""
        out.append(f"  {e.section:<9} {e.action:<10} {e.ref}: {e.reason}{saved}")
    out.append("")
    out.append(f"Warnings ({len(pack.warnings)}):")
    if not pack.warnings:
        out.append("  (none)")
    out.extend(f"  - {w}" for w in pack.warnings)
    return "\n".join(out) + "\n"
