"""A step's call fitted to its model's window, and what a server's "too long" changes.

The pack is built for the participant's model window (`campaigns.services.windows`), so
prompt plus answer fit. When a server still says "too long" (its tokenizer counted more
than we allowed for, or the window was declared too large), the same prompt is never
sent again: the pack is rebuilt for the window the server's error implies
(`context_engine.window.after_too_long`, which is also remembered for this server and
model), and called once more. If that is still too long, the step fails, saying so.
"""

from __future__ import annotations

from collections.abc import Callable

from campaigns.models import Participant
from campaigns.services.windows import reserve_for, window_learn
from context_engine.llm import ContextLengthError
from context_engine.types import ModelWindow, Pack
from context_engine.window import after_too_long


class TooLong(Exception):
    """A call the server refused as longer than its window (carries the server's error)."""

    def __init__(self, error: ContextLengthError, pack: Pack):
        super().__init__(str(error))
        self.error = error
        self.pack = pack


Call = Callable[[Pack, ModelWindow | None], str]


def fitted_answer(
    *,
    participant: Participant,
    window: ModelWindow | None,
    build: Callable[[ModelWindow | None], Pack],
    call: Call,
    fail: Callable[[str], Exception],
) -> tuple[str, ModelWindow | None]:
    """``call(pack, window)`` on ``build(window)``; on `TooLong`, once more
    on a pack built for the smaller window the server's answer implies. Returns the text
    and the window in effect (for the step's next call). Raises ``fail(reason)`` when the
    smaller pack is too long as well, or cannot be smaller."""
    pack = build(window)
    try:
        return call(pack, window), window
    except TooLong as refused:
        error = refused.error
        smaller = after_too_long(
            window,
            sent_tokens=pack.total_tokens,
            reserve=reserve_for(participant),
            limit=error.limit,
            prompt_tokens=error.prompt_tokens,
        )
        window_learn(participant, smaller)
        again = build(smaller)
        if again.total_tokens >= pack.total_tokens:
            raise fail(
                f"the prompt ({pack.total_tokens} tokens) is too long for "
                f"{participant.model}'s context window and cannot be made smaller: "
                f"{_said(error)}"
            ) from error
        try:
            return call(again, smaller), smaller
        except TooLong as still:
            raise fail(
                f"the prompt is too long for {participant.model}'s context window even "
                f"shrunk from {pack.total_tokens} to {again.total_tokens} tokens: "
                f"{_said(still.error)}"
            ) from still.error


def _said(error: ContextLengthError) -> str:
    return " ".join(str(error).split())[:200]
