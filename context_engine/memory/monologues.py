"""An agent's older monologues condensed into its own strategic summary (SPEC §5.6).

Monologues are private to their speaker, so the summary is too: this refuses input
from more than one speaker rather than risk blending two agents' secrets. Offline (or
when the model fails) it is extractive: the first sentence of each monologue, newest
kept first when space runs out, printed in story order.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from context_engine.llm.base import LLMClient, call_with_retries, is_offline
from context_engine.memory._text import clip_words, first_sentence, squash
from context_engine.tokens import count, truncate
from context_engine.types import TurnView

log = logging.getLogger(__name__)

_SYSTEM = (
    "Condense this agent's private monologues into a short strategic summary: its goals, "
    "suspicions, plans and promises, in bullet lines. Use only the text given. At most "
    "{words} words."
)


def _extractive(monologues: list[TurnView], max_tokens: int) -> str:
    speaker = monologues[0].speaker
    header = f"Strategic summary of {speaker}'s earlier thinking:"
    lines: list[str] = []
    seen: set[str] = set()
    for turn in reversed(monologues):  # newest first, so they survive the cap
        gist = clip_words(first_sentence(turn.content), 30)
        if not gist or gist.lower() in seen:
            continue
        candidate = [f"- R{turn.round}: {gist}", *lines]
        if count("\n".join([header, *candidate])) > max_tokens:
            break
        seen.add(gist.lower())
        lines = candidate
    return "\n".join([header, *lines]) if lines else ""


def condense_monologues(
    turns: Sequence[TurnView],
    *,
    client: LLMClient | None = None,
    max_tokens: int = 300,
    attempts: int = 2,
    sleep: Callable[[float], None] = time.sleep,
) -> str:
    """One agent's older monologues → a short strategic summary ("" if there are none).

    Only ``monologue`` turns are used; they must all be by one speaker (ValueError
    otherwise). The caller keeps the last two raw and passes the older ones.
    """
    monologues = sorted((t for t in turns if t.kind == "monologue"), key=lambda t: (t.seq, t.id))
    if not monologues:
        return ""
    speakers = {t.speaker for t in monologues}
    if len(speakers) > 1:
        raise ValueError(
            f"Monologues from several speakers {sorted(speakers)}: condense per agent."
        )
    extractive = _extractive(monologues, max_tokens)
    if client is None or is_offline(client):
        return extractive
    body = "\n".join(f"- R{t.round}: {squash(truncate(t.content, 400))}" for t in monologues)
    messages = [
        {"role": "system", "content": _SYSTEM.format(words=max(20, max_tokens * 3 // 4))},
        {"role": "user", "content": f"Monologues of {monologues[0].speaker}:\n{body}"},
    ]
    try:
        text = call_with_retries(
            lambda: client.complete(messages, max_output_tokens=max_tokens * 2),
            attempts=attempts,
            sleep=sleep,
        )
    except Exception as exc:
        log.warning("monologue summary model failed, using the extract: %s", exc)
        return extractive
    text = text.strip()
    if not text or count(text) > max_tokens:
        return extractive
    return text
