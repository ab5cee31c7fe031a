"""Ask a model server what it serves and how large its context window is.

Used when a model is set (is the server there, does it serve that model?) and before a
pack is built for it (how many tokens fit?). Each server says its window its own way:

- llama.cpp: ``GET /props`` → ``default_generation_settings.n_ctx`` (the slot's window,
  what a request really gets when the server runs several slots);
- Ollama: ``POST /api/show`` → ``parameters`` ``num_ctx`` when the model sets one, else
  ``model_info["<arch>.context_length"]`` capped at `OLLAMA_DEFAULT_NUM_CTX`: Ollama's
  OpenAI endpoint serves a model at its default ``num_ctx`` whatever it was trained on,
  and silently drops the start of a longer prompt;
- LM Studio: ``GET /api/v0/models/NAME`` → ``loaded_context_length`` (else
  ``max_context_length``);
- vLLM (and any OpenAI-compatible server that lists it): ``GET /v1/models`` →
  ``max_model_len``;
- Gemini: ``models.get`` (google-genai) → ``input_token_limit`` (input only: the answer
  has its own ``output_token_limit``).

Model calls go through the SDKs (`openai_compat`, `gemini`); the three non-OpenAI probes
are plain JSON over HTTP (urllib), as small as a health check.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass

from context_engine.llm.providers import PRESETS, Endpoint, server_root
from context_engine.types import ModelWindow

OLLAMA_DEFAULT_NUM_CTX = 4096  # Ollama's default num_ctx (0.6 and later)
ERROR_CHARS = 300


class ProbeError(Exception):
    """The server could not be asked: ``field`` is the setting to fix (base_url,
    api_key or model), ``message`` says why in a sentence."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Check:
    """What a "Test connection" found."""

    ok: bool
    model_id: str
    server: str
    seconds: float
    models: tuple[str, ...] = ()
    window: ModelWindow | None = None
    field: str = ""  # the setting to fix when not ok
    error: str = ""
    warnings: tuple[str, ...] = ()


def _short(text: object) -> str:
    return " ".join(str(text).split())[:ERROR_CHARS]


def _http_json(url: str, *, timeout: float, body: dict | None = None, key: str | None = None):
    """GET (or POST ``body``) JSON; ProbeError naming base_url/api_key/model on failure."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method="POST" if body is not None else "GET")
    request.add_header("Accept", "application/json")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            raise ProbeError("api_key", f"the server refused the key (HTTP {exc.code})") from exc
        if exc.code == 404:
            raise ProbeError("model", f"{url} answered 404") from exc
        raise ProbeError("base_url", f"{url} answered HTTP {exc.code}") from exc
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ProbeError("base_url", f"no answer from {url}: {_short(reason)}") from exc
    except ValueError as exc:
        raise ProbeError("base_url", f"{url} did not answer JSON") from exc


def _positive(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and value > 0:
        return value
    if isinstance(value, str) and value.strip().isdigit() and int(value) > 0:
        return int(value)
    return None


# -- windows --------------------------------------------------------------------------


def _llamacpp(where: Endpoint, timeout: float) -> ModelWindow | None:
    props = _http_json(f"{server_root(where.base_url or '')}/props", timeout=timeout)
    settings = props.get("default_generation_settings") if isinstance(props, dict) else None
    tokens = _positive((settings or {}).get("n_ctx")) or _positive((props or {}).get("n_ctx"))
    if tokens is None:
        return None
    return ModelWindow(tokens=tokens, source="llama.cpp /props n_ctx", model=where.model_id)


def _ollama(where: Endpoint, timeout: float) -> ModelWindow | None:
    shown = _http_json(
        f"{server_root(where.base_url or '')}/api/show",
        timeout=timeout,
        body={"model": where.model, "name": where.model},  # "name": Ollama before 0.5
    )
    if not isinstance(shown, dict):
        return None
    for line in str(shown.get("parameters") or "").splitlines():
        name, _, value = line.strip().partition(" ")
        if name == "num_ctx" and _positive(value.strip()):
            return ModelWindow(
                tokens=int(value.strip()), source="Ollama /api/show num_ctx", model=where.model_id
            )
    info = shown.get("model_info") or {}
    trained = next(
        (_positive(v) for k, v in sorted(info.items()) if k.endswith(".context_length")), None
    )
    if trained is None:
        return None
    if trained > OLLAMA_DEFAULT_NUM_CTX:
        return ModelWindow(
            tokens=OLLAMA_DEFAULT_NUM_CTX,
            source=(
                f"Ollama /api/show: trained for {trained}, served at Ollama's default "
                f"num_ctx {OLLAMA_DEFAULT_NUM_CTX} (set num_ctx in the Modelfile for more)"
            ),
            model=where.model_id,
        )
    return ModelWindow(
        tokens=trained, source="Ollama /api/show context_length", model=where.model_id
    )


def _lmstudio(where: Endpoint, timeout: float) -> ModelWindow | None:
    root = server_root(where.base_url or "")
    found = _http_json(f"{root}/api/v0/models/{where.model}", timeout=timeout, key=where.api_key)
    if not isinstance(found, dict):
        return None
    for key in ("loaded_context_length", "max_context_length"):
        tokens = _positive(found.get(key))
        if tokens:
            return ModelWindow(tokens=tokens, source=f"LM Studio {key}", model=where.model_id)
    return None


def _listed_window(where: Endpoint, listed: dict[str, dict]) -> ModelWindow | None:
    entry = listed.get(where.model)
    tokens = _positive((entry or {}).get("max_model_len"))
    if tokens is None:
        return None
    return ModelWindow(tokens=tokens, source="/v1/models max_model_len", model=where.model_id)


def _openai_models(where: Endpoint, timeout: float) -> dict[str, dict]:
    """The server's model list (id → its fields) through the openai SDK."""
    import openai

    client = openai.OpenAI(
        base_url=where.base_url, api_key=where.api_key or "not-needed", max_retries=0
    )
    try:
        page = client.models.list(timeout=timeout)
        return {m.id: m.model_dump() for m in page.data}
    except openai.AuthenticationError as exc:
        raise ProbeError("api_key", f"the server refused the key: {_short(exc.message)}") from exc
    except openai.PermissionDeniedError as exc:
        raise ProbeError("api_key", f"the server refused the key: {_short(exc.message)}") from exc
    except openai.APIStatusError as exc:
        raise ProbeError(
            "base_url", f"{where.base_url}/models answered HTTP {exc.status_code}"
        ) from exc
    except openai.APIError as exc:  # connection refused, timeout, not JSON
        raise ProbeError("base_url", f"no answer from {where.base_url}: {_short(exc)}") from exc
    finally:
        client.close()


def _gemini(where: Endpoint, timeout: float) -> ModelWindow | None:
    from google import genai
    from google.genai import errors, types

    client = genai.Client(
        api_key=where.api_key,
        vertexai=False,
        http_options=types.HttpOptions(
            base_url=where.base_url,
            timeout=max(1, int(timeout * 1000)),
            retry_options=types.HttpRetryOptions(attempts=1),
        ),
    )
    try:
        found = client.models.get(model=where.model)
    except errors.APIError as exc:
        if exc.code in (401, 403) or (exc.code == 400 and "key" in str(exc.message).lower()):
            raise ProbeError("api_key", f"Gemini refused the key: {_short(exc.message)}") from exc
        if exc.code == 404:
            raise ProbeError("model", f"Gemini has no model {where.model!r}") from exc
        raise ProbeError("base_url", f"Gemini answered HTTP {exc.code}") from exc
    except Exception as exc:  # transport errors of httpx / httpx2, timeouts
        raise ProbeError("base_url", f"no answer from Gemini: {_short(exc)}") from exc
    tokens = _positive(found.input_token_limit)
    if tokens is None:
        return None
    return ModelWindow(
        tokens=tokens,
        output_shares=False,
        source="Gemini models.get input_token_limit",
        model=where.model_id,
    )


def read_window(where: Endpoint, *, timeout: float = 5.0) -> ModelWindow | None:
    """The model's window as its server says it, None when it does not say; ProbeError
    when the server cannot be asked."""
    if where.offline:
        return None
    probe = PRESETS[where.preset].window_probe
    if probe == "gemini":
        return _gemini(where, timeout)
    if probe == "llamacpp":
        return _llamacpp(where, timeout)
    if probe == "ollama":
        return _ollama(where, timeout)
    if probe == "lmstudio":
        return _lmstudio(where, timeout)
    if probe == "vllm":
        return _listed_window(where, _openai_models(where, timeout))
    return None


def check(where: Endpoint, *, timeout: float = 5.0) -> Check:
    """Test the connection: is the server there, does it take the key, does it serve the
    model, what is its window. Never raises for the server's sake."""
    started = time.monotonic()
    preset = PRESETS[where.preset]

    def done(**fields) -> Check:
        return Check(
            model_id=where.model_id,
            server=where.server,
            seconds=round(time.monotonic() - started, 3),
            **fields,
        )

    if where.offline:
        return done(ok=True, warnings=("offline: no server is asked",))
    warnings: list[str] = []
    try:
        if where.api == "gemini":
            window = _gemini(where, timeout)
            return done(ok=True, models=(where.model,), window=window)
        listed = _openai_models(where, timeout)
        if where.model not in listed:
            served = ", ".join(sorted(listed)) or "none"
            if preset.lists_models:
                return done(
                    ok=False,
                    models=tuple(sorted(listed)),
                    field="model",
                    error=f"{where.server} does not serve {where.model!r}; it serves: {served}",
                )
            warnings.append(
                f"{where.server} lists {served}, not {where.model!r} (it may answer anyway)"
            )
        window = _listed_window(where, listed)
        if window is None and preset.window_probe not in (None, "vllm"):
            try:
                window = read_window(where, timeout=timeout)
            except ProbeError as exc:
                warnings.append(f"the window could not be read: {exc.message}")
        if window is None:
            warnings.append("the server does not say its context window: declare it")
        return done(ok=True, models=tuple(sorted(listed)), window=window, warnings=tuple(warnings))
    except ProbeError as exc:
        return done(ok=False, field=exc.field, error=exc.message)
