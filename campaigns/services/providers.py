"""A participant's model provider: checked when it is set, reached when it plays.

The model field's forms and presets are `context_engine.llm.providers`'. Here:

- `clean_provider_fields` checks what can be checked without a network (the id's form,
  the base URL's shape and host, the timeout and window ranges): every writer calls it.
- `provider_check` is the "Test connection": it asks the server (model list, window) and
  says what it found; `provider_check_or_400` turns a failure into a ValidationError on
  the field to fix (``model``, ``base_url`` or ``api_key``), for the API when a model is
  set. Keys never appear in what either returns.
- `participant_endpoint` / `participant_client`: where the participant's model runs and
  its client, from its own settings over the process's; raises ValueError (unknown
  provider, provider not configured here) so the relay fails the step loudly.

A participant's base URL is a request this server will make, so it may only name hosts
the operator allows (`allowed_hosts`): loopback, the hosts of GEMINI_BASE_URL and
OPENAI_BASE_URL, and ``BABEL_LLM_HOSTS`` ("*" for any).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError

from campaigns.models import Participant
from campaigns.models.campaign import MAX_CONTEXT_WINDOW, MAX_TIMEOUT_S, MIN_CONTEXT_WINDOW
from campaigns.reads.adapters import llm_settings
from campaigns.validation import MODEL_KEYS
from context_engine.llm import Endpoint, LLMClient, client_for_endpoint, endpoint
from context_engine.llm.probe import Check, check
from context_engine.llm.providers import (
    FORMS,
    ProviderNotConfigured,
    UnknownProviderError,
    clean_base_url,
    parse_model_id,
)

HUMAN = "human"
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def allowed_hosts() -> set[str]:
    hosts = set(LOOPBACK) | set(settings.BABEL_LLM_HOSTS)
    for url in (settings.GEMINI_BASE_URL, settings.OPENAI_BASE_URL):
        if url:
            hosts.add((urlsplit(url).hostname or "").lower())
    return hosts


def _clean_url(value: object, field: str) -> str:
    try:
        url = clean_base_url(value)
    except ValueError as exc:
        raise ValidationError({field: [str(exc)]}) from None
    hosts = allowed_hosts()
    host = (urlsplit(url).hostname or "").lower()
    if "*" not in hosts and host not in hosts:
        raise ValidationError(
            {
                field: [
                    f"Host {host!r} is not one this server may call: add it to BABEL_LLM_HOSTS "
                    "(loopback and the hosts of OPENAI_BASE_URL / GEMINI_BASE_URL are allowed)."
                ]
            }
        )
    if len(url) > 300:
        raise ValidationError({field: ["A base URL is at most 300 characters."]})
    return url


def _whole(value: object, low: int, high: int, field: str, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValidationError({field: [f"{what} must be a whole number from {low} to {high}."]})
    return value


def clean_provider_fields(
    *,
    model: object,
    base_url: object = "",
    api_key: object = "",
    timeout_s: object = None,
    context_window: object = None,
    max_output_tokens: object = None,
    allow_human: bool = True,
) -> dict:
    """The provider fields cleaned (no network), or ValidationError on the first bad one's
    name. Blank base URL / key: the preset's and the process's."""
    errors: dict[str, list[str]] = {}
    cleaned: dict = {}
    if model == HUMAN and allow_human:
        cleaned["model"] = HUMAN
    else:
        try:
            parse_model_id(model)
        except UnknownProviderError:
            human = "'human', " if allow_human else ""
            errors["model"] = [f"Unknown model {model!r}: use {human}{FORMS}."]
        else:
            if len(str(model)) > 100:
                errors["model"] = ["A model id is at most 100 characters."]
            cleaned["model"] = model
    checks = (
        ("base_url", lambda: _clean_url(base_url, "base_url") if base_url else ""),
        ("api_key", lambda: _clean_key(api_key)),
        ("timeout_s", lambda: _whole(timeout_s, 1, MAX_TIMEOUT_S, "timeout_s", "The timeout")),
        (
            "context_window",
            lambda: _whole(
                context_window,
                MIN_CONTEXT_WINDOW,
                MAX_CONTEXT_WINDOW,
                "context_window",
                "The context window",
            ),
        ),
    )
    for name, run in checks:
        try:
            cleaned[name] = run()
        except ValidationError as exc:
            errors.update(exc.message_dict)
    window = cleaned.get("context_window")
    if window and isinstance(max_output_tokens, int) and max_output_tokens >= window // 2:
        errors["max_output_tokens"] = [
            f"The answer may take at most half the {window}-token context window "
            f"(up to {window // 2 - 1} tokens): the prompt needs the rest."
        ]
    if errors:
        raise ValidationError(errors)
    return cleaned


def _clean_key(value: object) -> str:
    if value in (None, ""):
        return ""
    if not isinstance(value, str) or len(value) > 500 or any(c.isspace() for c in value):
        raise ValidationError({"api_key": ["A key is up to 500 characters with no spaces."]})
    return value


def endpoint_of(*, model: str, base_url: str = "", api_key: str = "", timeout_s=None) -> Endpoint:
    """Where a model with these settings runs (ValueError: unknown or not configured)."""
    return endpoint(
        model,
        llm_settings(),
        base_url=base_url or None,
        api_key=api_key or None,
        timeout=float(timeout_s) if timeout_s else None,
    )


def participant_endpoint(participant: Participant) -> Endpoint:
    return endpoint_of(
        model=participant.model,
        base_url=participant.base_url,
        api_key=participant.api_key,
        timeout_s=participant.timeout_s,
    )


def participant_client(participant: Participant) -> LLMClient:
    """The participant's client; ValueError naming what is missing when its provider is
    unknown or not configured in this process (never the offline client in its place)."""
    return client_for_endpoint(participant_endpoint(participant))


def provider_check(
    *, model: str, base_url: str = "", api_key: str = "", timeout_s=None
) -> Check | ValidationError:
    """Ask the server; a Check (ok or not), or the ValidationError a setting that cannot
    even be tried gives (unknown provider, not configured here)."""
    try:
        where = endpoint_of(model=model, base_url=base_url, api_key=api_key, timeout_s=timeout_s)
    except ProviderNotConfigured as exc:  # a server or a key is missing: say which field
        field = "base_url" if "OPENAI_BASE_URL" in str(exc) else "api_key"
        return ValidationError({field: [str(exc)]})
    except ValueError as exc:
        return ValidationError({"model": [str(exc)]})
    return check(where, timeout=float(settings.BABEL_LLM_CHECK_TIMEOUT))


def provider_check_or_400(**fields) -> Check | None:
    """`provider_check` for a setting being saved: ValidationError on the field to fix
    when the server cannot be reached or does not serve the model; None for ``human`` and
    ``offline`` (nothing to reach)."""
    if fields.get("model") in (HUMAN, "offline"):
        return None
    found = provider_check(**fields)
    if isinstance(found, ValidationError):
        raise found
    if not found.ok:
        raise ValidationError({found.field or "base_url": [found.error]})
    return found


def memory_models_check_or_400(config: dict, *, before: dict | None = None) -> None:
    """The memory workers' models a config sets (or changes), asked as a participant's
    are: ValidationError on ``config.KEY`` (or ``config.memory_base_url``) when one cannot
    be reached. Unchanged ones and ``offline`` are not asked again. A config that is not
    an object is left to `clean_config` to refuse."""
    if not isinstance(config, dict):
        return
    before = before if isinstance(before, dict) else {}
    base_url = config.get("memory_base_url") or ""
    moved = base_url != (before.get("memory_base_url") or "")
    errors: dict[str, list[str]] = {}
    if base_url:
        _clean_url(base_url, "config.memory_base_url")  # the host, before any request
    for key in MODEL_KEYS:
        model = config.get(key)
        if (
            not isinstance(model, str)
            or model == "offline"
            or (model == before.get(key) and not moved)
        ):
            continue
        try:
            provider_check_or_400(model=model, base_url=base_url)
        except ValidationError as exc:
            for field, messages in exc.message_dict.items():
                name = (
                    "config.memory_base_url"
                    if field == "base_url" and base_url
                    else f"config.{key}"
                )
                errors.setdefault(name, []).extend(messages)
    if errors:
        raise ValidationError(errors)


CONNECTION = ("model", "base_url", "api_key", "timeout_s")
# The fields whose change is checked against the server before it is saved.
PROVIDER_FIELDS = ("model", "base_url", "api_key", "timeout_s", "context_window")


def connection_after(changes: dict, participant: Participant | None = None) -> dict:
    """The connection settings after ``changes``: a blank key keeps the stored one, a
    null key clears it."""
    merged: dict = {"model": "human", "base_url": "", "api_key": "", "timeout_s": None}
    if participant is not None:
        merged.update({name: getattr(participant, name) for name in CONNECTION})
    for name in CONNECTION:
        if name not in changes or (name == "api_key" and changes[name] == ""):
            continue
        merged[name] = changes[name] if changes[name] is not None or name != "api_key" else ""
    return merged


def check_connection_changes(changes: dict, participant: Participant | None = None) -> None:
    """A new model or server is asked before it is saved (ValidationError on the field to
    fix), for the API and the console's cast page alike."""
    if not any(name in changes for name in PROVIDER_FIELDS):
        return
    merged = connection_after(changes, participant)
    clean_provider_fields(**merged)  # the form, the host, first: no request to a bad URL
    provider_check_or_400(**merged)


def check_as_dict(found: Check) -> dict:
    """A Check as the API shows it (no key, ever)."""
    window = found.window
    return {
        "ok": found.ok,
        "model": found.model_id,
        "server": found.server,
        "seconds": found.seconds,
        "models": list(found.models),
        "window": (
            {
                "tokens": window.tokens,
                "source": window.source,
                "output_shares": window.output_shares,
            }
            if window
            else None
        ),
        "field": found.field or None,
        "error": found.error or None,
        "warnings": list(found.warnings),
    }
