"""pytest fixtures for the stand-in model servers (registered by the root conftest.py).

Each fixture starts a fresh server on an ephemeral 127.0.0.1 port and stops it after the
test. The ``*_settings`` fixtures give ``LLMSettings`` that route ``client_for`` to it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from context_engine.llm import LLMSettings
from tests.standins.gemini_api import GeminiStandin
from tests.standins.openai_api import OpenAIStandin

STANDIN_TIMEOUT_SECONDS = 2.0  # clients time out quickly; "slow" answers take longer


@pytest.fixture
def gemini_standin() -> Iterator[GeminiStandin]:
    server = GeminiStandin(slow_seconds=STANDIN_TIMEOUT_SECONDS + 1.0)
    with server:
        yield server


@pytest.fixture
def openai_standin() -> Iterator[OpenAIStandin]:
    server = OpenAIStandin(slow_seconds=STANDIN_TIMEOUT_SECONDS + 1.0)
    with server:
        yield server


@pytest.fixture
def local_server() -> Iterator[Callable[[str], OpenAIStandin]]:
    """Start an OpenAI-compatible stand-in of a given flavour (llamacpp, ollama, lmstudio,
    vllm, openai): ``server = local_server("llamacpp")``; all are stopped after the test."""
    started: list[OpenAIStandin] = []

    def start(flavour: str = "openai") -> OpenAIStandin:
        server = OpenAIStandin(flavour=flavour, slow_seconds=STANDIN_TIMEOUT_SECONDS + 1.0)
        started.append(server.start())
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def gemini_settings(gemini_standin: GeminiStandin) -> LLMSettings:
    return LLMSettings(
        gemini_api_key="standin-key",
        gemini_base_url=gemini_standin.base_url,
        timeout_seconds=STANDIN_TIMEOUT_SECONDS,
    )


@pytest.fixture
def openai_settings(openai_standin: OpenAIStandin) -> LLMSettings:
    return LLMSettings(
        openai_base_url=openai_standin.base_url,
        timeout_seconds=STANDIN_TIMEOUT_SECONDS,
    )
