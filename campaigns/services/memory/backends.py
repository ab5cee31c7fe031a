"""Which model a memory task talks to, from the experiment's config and the settings.

``summarizer_model`` writes digests and strategic summaries; ``definer_model`` (else
``hydrator_model``) defines World Bible terms. Unset, both are ``memory_model`` (the
campaign's memory workers' model, one field with the participants' presets, at
``memory_base_url`` when set), else ``BABEL_MEMORY_MODEL``, else
`default_summarizer_model` (Gemini with a key, an OpenAI-compatible server with a base
URL, else offline). The ids are checked when the config is set; one this process cannot
reach anyway (a key or server missing here) degrades to the extractive engine with a
warning that names the model and what is missing: a background task must not fail on it,
and the digest records its method (``fallback``).
"""

from __future__ import annotations

import logging
import time

from django.conf import settings

from campaigns.models import Experiment
from campaigns.reads.adapters import llm_settings
from context_engine.llm import (
    LLMClient,
    OfflineClient,
    client_for,
    default_summarizer_model,
    is_offline,
)

log = logging.getLogger(__name__)

RETRY_ATTEMPTS = 3
DEFAULT_BASE_DELAY = 0.5  # the engine's own backoff base (call_with_retries)


def retry_base_delay() -> float:
    """Backoff base between model retries (seconds); tests shorten it via settings."""
    return float(settings.BABEL_LLM_RETRY_BASE_DELAY)


def scaled_sleep(seconds: float) -> None:
    """Sleep for an engine backoff step, scaled to the configured base delay."""
    time.sleep(seconds * retry_base_delay() / DEFAULT_BASE_DELAY)


def _model_id(experiment: Experiment, *keys: str) -> str:
    config = experiment.config or {}
    for key in (*keys, "memory_model"):
        value = config.get(key)
        if isinstance(value, str) and value:
            return value
    return settings.BABEL_MEMORY_MODEL or default_summarizer_model(llm_settings())


def _client(model_id: str, experiment: Experiment | None = None) -> LLMClient:
    base_url = ((experiment.config or {}) if experiment is not None else {}).get("memory_base_url")
    try:
        return client_for(model_id, llm_settings(), base_url=base_url or None)
    except ValueError as exc:
        log.warning(
            "memory model %r cannot be used in this process (%s); the extractive engine "
            "works instead",
            model_id,
            exc,
        )
        return OfflineClient()


def summarizer_client(experiment: Experiment) -> LLMClient:
    return _client(_model_id(experiment, "summarizer_model"), experiment)


def definer_configured(experiment: Experiment) -> bool:
    """Is a definer model configured? With ``offline`` no client (no SDK) is built."""
    if _model_id(experiment, "definer_model", "hydrator_model") == "offline":
        return False
    return not is_offline(definer_client(experiment))


def definer_client(experiment: Experiment) -> LLMClient:
    return _client(_model_id(experiment, "definer_model", "hydrator_model"), experiment)


# -- circuit breaker ----------------------------------------------------------------------
# A model that could not be reached (every call of a task failed on the wire) is presumed
# down for a while: the next memory
# calls go straight to their deterministic fallback instead of each waiting out its own
# timeouts (twenty definitions × two 30 s timeouts would hold a worker, or an eager
# /checkpoint, for twenty minutes). Per process and per client; nothing is persisted.
_down_since: dict[int, float] = {}


def breaker_seconds() -> float:
    return float(settings.BABEL_LLM_BREAKER_SECONDS)


def model_down(client: LLMClient) -> bool:
    since = _down_since.get(id(client))
    if since is None:
        return False
    if time.monotonic() - since >= breaker_seconds():
        _down_since.pop(id(client), None)
        return False
    return True


def mark_down(client: LLMClient) -> None:
    model = getattr(client, "model", "?")
    log.warning("model %s failed; skipping it for %ss", model, breaker_seconds())
    _down_since[id(client)] = time.monotonic()


def mark_up(client: LLMClient) -> None:
    _down_since.pop(id(client), None)


def judge_calls(client: LLMClient, calls) -> None:
    """The breaker after a memory worker's block (`worker_usage`'s calls): it opens when
    the model could not be reached — every call of the block failed on the wire (timed
    out, refused, no connection) — and closes on any answer. A bad answer (malformed
    JSON, a missing field) is an answer: the worker falls back for that one task and the
    next one asks the model again. A server that refused structured output and then
    answered in JSON mode answered."""
    if is_offline(client) or not calls:
        return
    if any(call.status == "ok" for call in calls):
        mark_up(client)
    else:
        mark_down(client)
