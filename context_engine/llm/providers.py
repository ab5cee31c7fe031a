"""The one model field: ``PROVIDER:NAME`` (or ``offline``, or ``gemini-…``) and its presets.

A participant (and a campaign's memory workers) name their model in one string; the part
before the colon picks a preset that says how to reach it:

==================  ==================================  ==========================  =========
model id            server                              default base URL            timeout
==================  ==================================  ==========================  =========
``offline``         none: the deterministic agent       –                           –
``gemini-NAME``     Google's Gemini API (a key)         the SDK's (GEMINI_BASE_URL)  default
``openai:NAME``     any OpenAI-compatible server        OPENAI_BASE_URL (required)  default
``lmstudio:NAME``   LM Studio                           http://127.0.0.1:1234/v1    CPU
``ollama:NAME``     Ollama                              http://127.0.0.1:11434/v1   CPU
``llamacpp:NAME``   llama.cpp's ``llama-server``         http://127.0.0.1:8080/v1    CPU
``vllm:NAME``       vLLM                                http://127.0.0.1:8000/v1    default
==================  ==================================  ==========================  =========

A participant's own base URL and key override the preset's. "CPU" presets get the longer
``cpu_timeout_seconds`` (local models on a CPU take minutes, not seconds). Nothing here
falls back to offline: a model whose provider lacks what it needs (Gemini without a key,
``openai:`` without a base URL) raises `ProviderNotConfigured`, so a step fails loudly
instead of playing offline under another model's name.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

OFFLINE = "offline"


class UnknownProviderError(ValueError):
    """The model id names no provider this project knows."""


class ProviderNotConfigured(ValueError):
    """The provider is known but this process lacks what it needs (a key, a base URL)."""


@dataclass(frozen=True)
class Preset:
    name: str
    label: str
    api: str  # gemini | openai | offline
    default_base_url: str | None = None
    cpu: bool = False  # local, usually on a CPU: longer timeouts, timeouts not retried
    # How the server tells its context window (`context_engine.llm.probe`), if it does.
    window_probe: str | None = None
    # Does the server's model list name every model it can answer? (A mismatch is then an
    # error when the model is set; llama.cpp answers whatever it loaded, whatever the name.)
    lists_models: bool = False


PRESETS: dict[str, Preset] = {
    preset.name: preset
    for preset in (
        Preset("offline", "Offline (no model)", "offline"),
        Preset("gemini", "Gemini", "gemini", window_probe="gemini", lists_models=True),
        Preset("openai", "OpenAI-compatible (OPENAI_BASE_URL)", "openai", window_probe="vllm"),
        Preset(
            "lmstudio",
            "LM Studio",
            "openai",
            "http://127.0.0.1:1234/v1",
            cpu=True,
            window_probe="lmstudio",
            lists_models=True,
        ),
        Preset(
            "ollama",
            "Ollama",
            "openai",
            "http://127.0.0.1:11434/v1",
            cpu=True,
            window_probe="ollama",
            lists_models=True,
        ),
        Preset(
            "llamacpp",
            "llama.cpp (llama-server)",
            "openai",
            "http://127.0.0.1:8080/v1",
            cpu=True,
            window_probe="llamacpp",
        ),
        Preset(
            "vllm",
            "vLLM",
            "openai",
            "http://127.0.0.1:8000/v1",
            window_probe="vllm",
            lists_models=True,
        ),
    )
}
FORMS = "'offline', 'gemini-NAME', or PROVIDER:NAME with PROVIDER one of " + ", ".join(
    name for name in PRESETS if name not in ("offline", "gemini")
)


@dataclass(frozen=True)
class Endpoint:
    """Everything needed to reach one model: which API, where, with what, how long."""

    model_id: str  # as written in the model field
    preset: str
    api: str  # gemini | openai | offline
    model: str  # the name the server is asked for
    base_url: str | None = None
    api_key: str | None = None
    timeout_seconds: float = 30.0
    cpu: bool = False

    @property
    def offline(self) -> bool:
        return self.api == "offline"

    @property
    def server(self) -> str:
        """Where it runs, for messages and cache keys (never the key)."""
        return self.base_url or ("Gemini" if self.api == "gemini" else self.api)


def parse_model_id(model_id: object) -> tuple[Preset, str]:
    """(preset, the server's model name) or UnknownProviderError naming the forms."""
    if not isinstance(model_id, str) or not model_id.strip() or model_id != model_id.strip():
        raise UnknownProviderError(f"Unknown model id {model_id!r}: use {FORMS}.")
    if model_id == OFFLINE:
        return PRESETS["offline"], OFFLINE
    if model_id.startswith("gemini-") and len(model_id) > len("gemini-"):
        return PRESETS["gemini"], model_id
    provider, colon, name = model_id.partition(":")
    preset = PRESETS.get(provider)
    if not colon or preset is None or preset.api != "openai" or not name.strip():
        raise UnknownProviderError(f"Unknown model id {model_id!r}: use {FORMS}.")
    return preset, name


def is_known_model_id(model_id: object) -> bool:
    try:
        parse_model_id(model_id)
    except UnknownProviderError:
        return False
    return True


def clean_base_url(value: object) -> str:
    """An http(s) URL with a host, no credentials in it, or ValueError saying why."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError("A base URL is an http:// or https:// address.")
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("A base URL is an http:// or https:// address with a host.")
    if parts.username or parts.password:
        raise ValueError("Put the key in the key field, not in the base URL.")
    if parts.query or parts.fragment:
        raise ValueError("A base URL has no query or fragment.")
    return value.strip().rstrip("/")


def endpoint_for(
    model_id: str,
    *,
    gemini_api_key: str | None = None,
    gemini_base_url: str | None = None,
    openai_base_url: str | None = None,
    openai_api_key: str | None = None,
    timeout_seconds: float = 30.0,
    cpu_timeout_seconds: float = 300.0,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout: float | None = None,
) -> Endpoint:
    """The endpoint for ``model_id``: the participant's own ``base_url`` / ``api_key`` /
    ``timeout`` first, then the process's settings, then the preset's defaults.

    Raises UnknownProviderError or ProviderNotConfigured (both ValueError) naming what is
    missing and where to set it.
    """
    preset, name = parse_model_id(model_id)
    seconds = (
        float(timeout) if timeout else (cpu_timeout_seconds if preset.cpu else timeout_seconds)
    )
    if preset.api == "offline":
        return Endpoint(model_id, preset.name, "offline", OFFLINE, timeout_seconds=seconds)
    if preset.api == "gemini":
        # The process's key goes only to the process's server: a participant who points
        # Gemini elsewhere brings their own key (else the key would leave for their URL).
        key = api_key or (gemini_api_key if not base_url else None)
        if not key:
            raise ProviderNotConfigured(
                f"{model_id} needs a Gemini API key: set GEMINI_API_KEY in the environment "
                "of the process that runs the agents (web and worker), or the participant's key."
            )
        return Endpoint(
            model_id,
            preset.name,
            "gemini",
            name,
            base_url=base_url or gemini_base_url,
            api_key=key,
            timeout_seconds=seconds,
        )
    url = base_url or (openai_base_url if preset.name == "openai" else preset.default_base_url)
    if not url:
        raise ProviderNotConfigured(
            f"{model_id} needs a server: set OPENAI_BASE_URL in the environment of the "
            "process that runs the agents, give the participant a base URL, or use a preset "
            "(lmstudio:, ollama:, llamacpp:, vllm:)."
        )
    # OPENAI_API_KEY belongs to OPENAI_BASE_URL: never sent to a participant's own server.
    key = api_key or (openai_api_key if preset.name == "openai" and not base_url else None)
    return Endpoint(
        model_id,
        preset.name,
        "openai",
        name,
        base_url=url.rstrip("/"),
        api_key=key or None,
        timeout_seconds=seconds,
        cpu=preset.cpu,
    )


def server_root(base_url: str) -> str:
    """``http://host:port/v1`` → ``http://host:port``: where llama.cpp's /props, Ollama's
    /api/show and LM Studio's /api/v0 live."""
    url = base_url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url
