"""The real-model tier (`make test-models`): SmolLM2-135M-Instruct served by
llama-cpp-python on 127.0.0.1, in its own virtualenv (the Makefile builds it).

``BABEL_MODEL_SERVER_PYTHON`` is that virtualenv's python and ``BABEL_MODEL_GGUF`` the
model file; without them these tests skip, and with ``BABEL_REQUIRE_MODEL=1`` (set by
`make test-models`) their absence is a failure. The server starts once per session with
a small context window (`N_CTX`), so the window is something the app must respect.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.models.wire import Wire

N_CTX = 4096
MODEL_ALIAS = "smollm2"
START_TIMEOUT = 180


def _required() -> bool:
    return os.environ.get("BABEL_REQUIRE_MODEL", "").strip().lower() in {"1", "true", "yes"}


def _missing(reason: str) -> None:
    if _required():
        pytest.fail(f"BABEL_REQUIRE_MODEL is set but {reason}", pytrace=False)
    pytest.skip(f"{reason} (the real-model tier runs with `make test-models`)")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass(frozen=True)
class ModelServer:
    url: str  # http://127.0.0.1:PORT (no /v1)
    n_ctx: int
    model: str  # the model id agents use: openai:<alias>
    log: Path


@pytest.fixture(scope="session")
def model_server(tmp_path_factory) -> Iterator[ModelServer]:
    python = os.environ.get("BABEL_MODEL_SERVER_PYTHON", "").strip()
    gguf = os.environ.get("BABEL_MODEL_GGUF", "").strip()
    if not python or not Path(python).exists():
        _missing("BABEL_MODEL_SERVER_PYTHON does not name llama-cpp-python's interpreter")
    if not gguf or not Path(gguf).is_file():
        _missing("BABEL_MODEL_GGUF does not name the SmolLM2 GGUF file")
    port = _free_port()
    log = tmp_path_factory.mktemp("model") / "llama-server.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [
                python,
                "-m",
                "llama_cpp.server",
                "--model",
                gguf,
                "--model_alias",
                MODEL_ALIAS,
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--n_ctx",
                str(N_CTX),
                "--n_threads",
                str(max(1, min(2, os.cpu_count() or 1))),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if process.poll() is not None:
                pytest.fail(f"llama-cpp-python exited: {log.read_text()[-2000:]}", pytrace=False)
            try:
                with urllib.request.urlopen(f"{url}/v1/models", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama-cpp-python did not start: {log.read_text()[-2000:]}")
            time.sleep(0.5)
        yield ModelServer(url=url, n_ctx=N_CTX, model=f"openai:{MODEL_ALIAS}", log=log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture
def wire(model_server: ModelServer, settings) -> Iterator[Wire]:
    """The app pointed at the real server through a recording proxy."""
    with Wire(model_server.url) as proxy:
        settings.OPENAI_BASE_URL = proxy.base_url
        settings.LLM_TIMEOUT_SECONDS = 300
        settings.BABEL_LLM_RETRY_BASE_DELAY = 0.01
        yield proxy
