"""Model calls with their usage: Gemini prefix caching, recording, per-round summaries.

The relay asks `model_call_complete` for an answer and `model_call_record` to keep what
the call cost; memory workers (digests, definitions, vetting) record theirs through
`worker_usage`. Caching is the provider's: OpenAI-compatible servers cache the longest
prefix they have seen by themselves (`to_openai_messages` puts the stable sections
first); Gemini needs an explicit cached content, which this module creates for an agent's
system instruction (its frozen prefix) behind ``BABEL_GEMINI_CONTEXT_CACHE``, registers in
Django's cache under (experiment, role, model, prefix hash), reuses by name while the
prefix is unchanged, and gives up on (plain call) when the prefix is under the token
floor or the provider refuses.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import DatabaseError, transaction

from campaigns.models import Experiment, Job, ModelCall
from context_engine.llm import (
    Completion,
    GenerationOptions,
    LLMError,
    Message,
    PermanentLLMError,
    Usage,
    collecting_usage,
    prefix_fingerprints,
    prefix_hash,
    prompt_bytes,
    stable_share,
)
from context_engine.llm.base import split_system
from context_engine.llm.usage import CallRecord
from context_engine.tokens import count

log = logging.getLogger(__name__)

Retry = Callable[[Callable[[], Any]], Any]
CACHE_TTL_MARGIN = 60  # forget a registered cache this long before the provider drops it
REFUSED = "-"  # registered when creation failed: no new attempt for this prefix for a while
REFUSED_SECONDS = 600


def _once(fn: Callable[[], Any]) -> Any:
    return fn()


def step_key(*, round: int, step: str, role: str) -> str:
    """The idempotency key of a relay step's model call (one row per step)."""
    return f"round:{round}:{step}:{role}"


# -- Gemini context cache ----------------------------------------------------------------


def _registry_key(experiment: Experiment, role: str, model: str, digest: str) -> str:
    return f"gemini-cache:{experiment.pk}:{role}:{model}:{digest}"


def gemini_prefix_cache(
    *, experiment: Experiment, role: str, client: Any, system: str, retry: Retry = _once
) -> str | None:
    """The name of a cached content holding ``system`` for this agent, or None.

    None when caching is off, the client cannot cache, the prefix is under the floor, or
    creating the cache failed (the call then goes out plain, nothing else changes).
    """
    if not settings.BABEL_GEMINI_CONTEXT_CACHE or not hasattr(client, "create_cache"):
        return None
    if not system or count(system) < settings.BABEL_GEMINI_CACHE_MIN_TOKENS:
        return None
    key = _registry_key(experiment, role, client.model, prefix_hash(system))
    name = cache.get(key)
    if name:
        return None if name == REFUSED else name
    ttl = int(settings.BABEL_GEMINI_CACHE_TTL)
    try:
        name = retry(lambda: client.create_cache(system=system, ttl_seconds=ttl))
    except LLMError as exc:
        # Too small for this model, quota, outage: every call would pay a failing request
        # before its plain one, so this prefix goes uncached for a while.
        log.warning("Gemini cache for %s (experiment %s) not created: %s", role, experiment.pk, exc)
        cache.set(key, REFUSED, timeout=min(ttl, REFUSED_SECONDS))
        return None
    cache.set(key, name, timeout=max(1, ttl - CACHE_TTL_MARGIN))
    return name


def model_call_complete(
    *,
    experiment: Experiment,
    role: str,
    client: Any,
    messages: list[Message],
    options: GenerationOptions | None = None,
    frozen_prefix: str = "",
    retry: Retry = _once,
    on_text: Callable[[str], None] | None = None,
) -> Completion:
    """Call the model with its sampling settings, through the agent's cached prefix when
    there is one. A refused cached call (expired, deleted) drops the registration and is
    made again plain. Raises LLMError when the plain call fails too.

    ``frozen_prefix`` is the part of the system message that survives rounds
    (`context_engine.render.frozen_prefix`); only it is cached, and the rest of the system
    message (state, digest) leads the request's contents, because a Gemini call that names
    a cache may not carry a system instruction of its own. Without it the whole system
    message is cached, and any change to it needs a new cache.

    ``on_text`` (issue 25): the answer is streamed (the client's ``stream_with_usage``)
    and each piece passed to it as the model writes; the completion is the same.
    """

    def call(asked: list[Message], **extra: Any) -> Completion:
        if on_text is not None and hasattr(client, "stream_with_usage"):
            return client.stream_with_usage(asked, options=options, on_text=on_text, **extra)
        return client.complete_with_usage(asked, options=options, **extra)

    system, conversation = split_system(messages)
    prefix = frozen_prefix if frozen_prefix and system.startswith(frozen_prefix) else system
    name = gemini_prefix_cache(
        experiment=experiment, role=role, client=client, system=prefix, retry=retry
    )
    if name:
        tail = system[len(prefix) :].strip()
        cached = [{"role": "user", "content": tail}] if tail else []
        cached += conversation
        try:
            return retry(lambda: call(cached, cached_content=name))
        except PermanentLLMError as exc:
            log.warning("Gemini cached call refused (%s); calling without the cache", exc)
            cache.delete(_registry_key(experiment, role, client.model, prefix_hash(prefix)))
    return retry(lambda: call(messages))


# -- recording ---------------------------------------------------------------------------


@contextmanager
def worker_usage(*, experiment: Experiment, worker: str) -> Iterator[list[CallRecord]]:
    """Record the model calls a memory worker makes inside the block (`ModelCall` rows
    with a blank role, ``step`` = ``worker``), also when the block fails after some.

    The key is the worker and the prompt's hash: the same prompt run again (a retried
    task) updates its row, as a relay step does. A call that did not answer (timed out,
    refused, failed) is kept under its own key with its status and the server's words.
    Yields the block's calls as they are made (the breaker reads them: `backends`).
    """
    with collecting_usage() as calls:
        try:
            yield calls
        finally:
            for call in calls:
                digest = hashlib.sha256(prompt_bytes(call.messages)).hexdigest()[:32]
                key = f"{worker}:{digest}"
                model_call_note(
                    experiment=experiment,
                    key=key if call.status == "ok" else f"{key}:{call.status}",
                    round=experiment.current_round,
                    role="",
                    step=worker,
                    model=call.model,
                    messages=list(call.messages),
                    usage=call.usage,
                    status=call.status,
                    error=call.error,
                    seconds=call.seconds,
                )


def model_call_note(**fields: Any) -> ModelCall | None:
    """`model_call_record` for the relay: usage is bookkeeping, so a failed write is logged
    and the step goes on (its turns matter more than its token counts)."""
    try:
        return model_call_record(**fields)
    except DatabaseError:
        log.exception("usage of %s not recorded", fields.get("key"))
        return None


@transaction.atomic
def model_call_record(
    *,
    experiment: Experiment,
    key: str,
    round: int,
    role: str,
    step: str,
    model: str,
    messages: list[Message],
    usage: Usage,
    job: Job | None = None,
    status: str = ModelCall.Status.OK,
    error: str = "",
    seconds: float | None = None,
) -> ModelCall:
    """Store one call's usage and prefix stability; recording the same key again updates
    the row (a step run twice is counted once). ``status`` says how it ended (a call that
    did not answer has no tokens and the server's words in ``error``)."""
    data = prompt_bytes(messages)
    blocks = prefix_fingerprints(data)
    # Compared with answered calls only: a refused prompt warmed no provider cache.
    earlier = ModelCall.objects.filter(experiment=experiment, role=role, status=ModelCall.Status.OK)
    if not role:  # memory workers: each worker's prompts against its own
        earlier = earlier.filter(step=step)
    previous = (
        earlier.exclude(key=key).order_by("-id").values_list("prefix_blocks", flat=True).first()
    )
    call, _ = ModelCall.objects.update_or_create(
        experiment=experiment,
        key=key,
        defaults={
            "job": job,
            "round": round,
            "role": role,
            "step": step,
            "model": model,
            "tokens_in": usage.tokens_in,
            "tokens_cached": min(usage.tokens_cached, usage.tokens_in),
            "tokens_out": usage.tokens_out,
            "prompt_bytes": len(data),
            "prefix_blocks": blocks,
            "prefix_stable_share": stable_share(previous, blocks, len(data)),
            "cache_name": usage.cache_name[:200],
            "status": status,
            "error": error[:2000],
            "duration_ms": None if seconds is None else max(0, int(seconds * 1000 + 0.5)),
        },
    )
    return call
