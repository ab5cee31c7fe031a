"""Judges: does a pack still hold a fact?

Offline: the fact is retained when every answer string appears in the pack's text
(case-insensitive). The model judge asks the fact's question with only the pack as
context, with structured output (``{"answer": str, "known": bool}``), and grades the
answer against the raw log's truth — the fact's answer strings — the same way. Answers
are cached by (pack hash, fact): identical packs (same text at several budgets, or a
rerun) cost one call. Any model failure, after the client's transient retries, marks
the model down: that question and every later one fall back to the offline judge, and
the stats say so (the report prints the note).

Leaks are always counted with the offline rule (an answer string in the pack of a role
outside the fact's audience): asking a model every role's every secret would cost a
call per role × fact × pack, and a string that is there is a leak whatever a model says.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass

from context_engine.arena.facts import FactView
from context_engine.llm.base import LLMClient, call_with_retries

JUDGE_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}, "known": {"type": "boolean"}},
    "required": ["answer", "known"],
}
JUDGE_SYSTEM = (
    "You are grading an agent's memory. Answer the question using ONLY the context "
    "below (the agent's prompt pack); do not guess and use no outside knowledge. Quote "
    "the exact words from the context that answer it. If the context does not say, set "
    '"known" to false and "answer" to "".'
)


def pack_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def offline_known(text_lower: str, fact: FactView) -> bool:
    return all(a.strip().lower() in text_lower for a in fact.answer)


@dataclass
class JudgeStats:
    judge: str = "offline"
    questions: int = 0
    model_calls: int = 0
    cache_hits: int = 0
    fallbacks: int = 0
    fallback_reason: str = ""

    @property
    def note(self) -> str:
        if self.judge == "offline":
            text = "offline judge: answer strings matched in the pack"
            if self.fallback_reason:
                text += f" (model judge not used: {self.fallback_reason})"
            return text
        text = (
            f"model judge {self.judge}: {self.questions} questions, {self.model_calls} model "
            f"calls, {self.cache_hits} cached"
        )
        if self.fallbacks:
            text += (
                f"; {self.fallbacks} fell back to the offline judge after a model failure "
                f"({self.fallback_reason})"
            )
        return text

    def as_dict(self) -> dict:
        return {
            "judge": self.judge,
            "questions": self.questions,
            "model_calls": self.model_calls,
            "cache_hits": self.cache_hits,
            "fallbacks": self.fallbacks,
            "fallback_reason": self.fallback_reason,
            "note": self.note,
        }


class OfflineJudge:
    name = "offline"

    def __init__(self) -> None:
        self.stats = JudgeStats()

    def known(self, text: str, text_lower: str, digest: str, fact: FactView) -> bool:
        self.stats.questions += 1
        return offline_known(text_lower, fact)


class ModelJudge:
    """An LLM judge (Gemini or OpenAI-compatible through `context_engine.llm`)."""

    def __init__(
        self,
        client: LLMClient,
        *,
        attempts: int = 2,
        base_delay: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
        timeout: float | None = None,
    ) -> None:
        self.client = client
        self.name = client.model
        self.attempts = attempts
        self.base_delay = base_delay
        self.sleep = sleep
        self.timeout = timeout
        self.down = False
        self.cache: dict[tuple, bool] = {}
        self.stats = JudgeStats(judge=client.model)

    def messages(self, text: str, fact: FactView) -> list[dict[str, str]]:
        return [
            {"role": "system", "content": JUDGE_SYSTEM},
            {"role": "user", "content": f"Context:\n{text}\n\nQuestion: {fact.question}"},
        ]

    def known(self, text: str, text_lower: str, digest: str, fact: FactView) -> bool:
        self.stats.questions += 1
        key = (digest, fact.id, fact.question, fact.answer)
        if key in self.cache:
            self.stats.cache_hits += 1
            return self.cache[key]
        if self.down:
            self.stats.fallbacks += 1
            return offline_known(text_lower, fact)
        try:
            self.stats.model_calls += 1
            data = call_with_retries(
                lambda: self.client.complete_json(
                    self.messages(text, fact), schema=JUDGE_SCHEMA, timeout=self.timeout
                ),
                attempts=self.attempts,
                base_delay=self.base_delay,
                sleep=self.sleep,
            )
        except Exception as exc:  # any failure: this and later questions go offline
            self.down = True
            self.stats.fallbacks += 1
            self.stats.fallback_reason = f"{type(exc).__name__}: {exc}"[:300]
            return offline_known(text_lower, fact)
        answer = data.get("answer") if isinstance(data, dict) else None
        known = bool(isinstance(data, dict) and data.get("known") is True)
        result = known and isinstance(answer, str) and offline_known(answer.lower(), fact)
        self.cache[key] = result
        return result
