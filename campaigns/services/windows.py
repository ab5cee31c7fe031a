"""How much an agent's model can read: its window, declared or asked of its server.

`model_window(participant)` is what a pack is fitted to (`context_engine.window.fit`):

1. the participant's declared ``context_window``, if any;
2. else what its server says (`context_engine.llm.probe.read_window`: llama.cpp /props,
   Ollama /api/show, LM Studio, vLLM's model list, Gemini's models.get), cached in
   Django's cache per (server, model) for ``BABEL_LLM_WINDOW_TTL`` seconds — a server
   that did not answer is asked again after `UNKNOWN_SECONDS`;
3. and never more than what a server's own "too long" taught us (`window_learn`),
   which is cached the same way: a wrong declaration is corrected by the first refusal.

No window (a human, ``offline``, a server that does not say): the campaign's budget as is.
The answer's room (``reserve``) is the participant's max output, else
``BABEL_DEFAULT_MAX_OUTPUT_TOKENS``; it is also sent as the call's output limit
(`call_options`), so prompt plus answer really fit.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import asdict, replace

from django.conf import settings
from django.core.cache import cache

from campaigns.models import Experiment, Participant
from campaigns.services.providers import HUMAN, participant_endpoint
from context_engine.llm import Endpoint, GenerationOptions
from context_engine.llm.probe import ProbeError, read_window
from context_engine.types import ModelWindow

log = logging.getLogger(__name__)

UNKNOWN_SECONDS = 60
_NONE = "none"


def _key(kind: str, where: Endpoint) -> str:
    digest = hashlib.sha256(f"{where.preset}|{where.server}|{where.model}".encode()).hexdigest()
    return f"model-window:{kind}:{digest[:32]}"


def reserve_for(participant: Participant) -> int:
    return participant.max_output_tokens or int(settings.BABEL_DEFAULT_MAX_OUTPUT_TOKENS)


def server_window(where: Endpoint) -> ModelWindow | None:
    """The window the server says (cached); None when it does not say or cannot be asked."""
    key = _key("probe", where)
    stored = cache.get(key)
    if stored == _NONE:
        return None
    if isinstance(stored, dict):
        return ModelWindow(**stored)
    try:
        found = read_window(where, timeout=float(settings.BABEL_LLM_CHECK_TIMEOUT))
    except ProbeError as exc:
        log.warning("window of %s at %s not read: %s", where.model_id, where.server, exc.message)
        found = None
    if found is None:
        cache.set(key, _NONE, timeout=UNKNOWN_SECONDS)
        return None
    cache.set(key, asdict(found), timeout=int(settings.BABEL_LLM_WINDOW_TTL) or None)
    return found


def window_learn(participant: Participant, window: ModelWindow) -> None:
    """Keep what a server's "too long" taught: packs for this (server, model) fit it."""
    try:
        where = participant_endpoint(participant)
    except ValueError:
        return
    cache.set(
        _key("learned", where), asdict(window), timeout=int(settings.BABEL_LLM_WINDOW_TTL) or None
    )


def model_window(participant: Participant) -> ModelWindow | None:
    """The window ``participant``'s packs fit, with the answer's room; None when unknown."""
    if participant.model in (HUMAN, "offline"):
        return None
    reserve = reserve_for(participant)
    try:
        where = participant_endpoint(participant)
    except ValueError:
        where = None  # the step will fail loudly on it; the inspector shows no cap
    window = None
    if participant.context_window:
        window = ModelWindow(
            tokens=participant.context_window,
            source="declared on the participant",
            model=participant.model,
        )
    elif where is not None:
        window = server_window(where)
    learned = cache.get(_key("learned", where)) if where is not None else None
    if isinstance(learned, dict):
        taught = ModelWindow(**learned)
        if window is None:
            window = taught
        elif taught.tokens < window.tokens or taught.ratio > window.ratio:
            window = replace(
                window,
                tokens=min(window.tokens, taught.tokens),
                ratio=max(window.ratio, taught.ratio),
                source=f"{window.source}, corrected by {taught.source}",
            )
    if window is None:
        return None
    return replace(window, reserve=reserve, model=participant.model)


def window_for_role(*, experiment: Experiment | int, role: str) -> ModelWindow | None:
    """`model_window` of the participant playing ``role`` (None: no such participant)."""
    experiment_id = experiment if isinstance(experiment, int) else experiment.pk
    participant = Participant.objects.filter(experiment_id=experiment_id, role=role).first()
    return model_window(participant) if participant is not None else None


def call_options(participant: Participant, window: ModelWindow | None) -> GenerationOptions:
    """The participant's sampling settings; inside a known shared window the answer is
    limited to the room kept for it, so the server never runs past its window."""
    limit = participant.max_output_tokens
    if limit is None and window is not None and window.output_shares:
        limit = window.reserve or reserve_for(participant)
    return GenerationOptions(temperature=participant.temperature, max_output_tokens=limit)
