"""A real HTTP server on 127.0.0.1 that plays a model provider, for the real SDKs to hit.

Nothing is monkeypatched: the google-genai / openai SDK builds its real request, sends
it over TCP, and parses what comes back. Each server has a FIFO *script* of behaviours
and a *default* used when the script is empty, and records every request it receives.

It works outside pytest too (a Celery worker in another process only needs the URL):

    server = GeminiStandin().start()        # ephemeral port; server.base_url
    server.script(["429", "500"])          # next two requests fail, then the default
    server.set_default("ok")
    server.stop()                           # connections now refused (mid-run outage)
    server.start()                          # same port again

Responses close the connection (no keep-alive), so ``stop()`` really cuts off clients.

Streaming (issue 25): a request that asks for a stream (OpenAI ``"stream": true``,
Gemini ``:streamGenerateContent?alt=sse``) gets the same answer as server-sent events,
``chunk_words`` words a chunk, ``chunk_delay`` seconds apart (``first_chunk_delay``
before the first): a "slowly streaming" model. The provider's usage comes in the last
chunk. ``stream_break`` sends two chunks and drops the connection.
"""

from __future__ import annotations

import json
import re
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

from tests.standins.answers import json_answer, text_answer


def standin_tokens(text: str) -> int:
    """The stand-ins' token count: one per four UTF-8 bytes, rounded up (deterministic)."""
    size = len(text.encode())
    return (size + 3) // 4


BEHAVIOURS = (
    "ok",  # a canned good answer for the request kind
    "429",  # rate limited
    "500",  # server error
    "400",  # a permanent client error
    "slow",  # a good answer, but only after ``slow_seconds``
    "malformed_json",  # 200 with model text that is broken JSON
    "missing_heading",  # 200 with a digest lacking "Open Threads"
    "garbage",  # 200 whose HTTP body is not JSON at all
    "safety",  # the provider's safety block
    "disconnect",  # close the socket without answering
    "vet_lines",  # a vetting model answering each proposal line from that line (answers.py)
    "vet_blend",  # a vetting model mixing every line's sentences about a term (answers.py)
    "too_long",  # the provider's "context length exceeded" 400, with its numbers
    "unlabelled",  # a weak model: prose with no labelled block, even when asked again
    "unlabelled_repairable",  # prose with no labels, labelled when asked to repair it
    "echo_format",  # a weak model copying the answer format it was given as its answer
    "stream_break",  # a streamed answer cut off after its first chunks (plain: disconnect)
)


@dataclass(frozen=True)
class Reply:
    """A one-off custom answer: model ``text`` in a good envelope, or an error ``status``."""

    text: str | None = None
    status: int = 200
    delay: float = 0.0


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    json: Any
    behaviour: str
    prompt: str = ""
    model: str = ""
    wants_json: bool = False
    schema: dict | None = field(default=None)
    stream: bool = False


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    standin: StandinServer


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer

    def do_POST(self) -> None:
        self.server.standin._handle(self, "POST")

    def do_GET(self) -> None:
        self.server.standin._handle(self, "GET")

    def do_DELETE(self) -> None:
        self.server.standin._handle(self, "DELETE")

    def log_message(self, format: str, *args: object) -> None:
        pass  # keep test output clean; requests are recorded instead


class StandinServer:
    """Common machinery; subclasses speak one provider's wire format."""

    api_name: ClassVar[str] = "base"

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        default: str | Reply = "ok",
        slow_seconds: float = 2.0,
    ):
        self.host = host
        self.port = port
        self.slow_seconds = slow_seconds
        self._default: str | Reply = self._check(default)
        self._script: deque[str | Reply] = deque()
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        # The model's context window as the server enforces it (None: no limit): a request
        # whose prompt (stand-in tokens) plus max output exceeds it gets "too long".
        self.context_window: int | None = None
        # Slow answers abandoned by their client (it timed out and closed the connection),
        # with the seconds the stand-in had been "generating": the server stops there.
        self.abandoned: list[float] = []
        # Streaming: words per chunk, seconds between chunks and before the first one.
        self.chunk_words = 1
        self.chunk_delay = 0.0
        self.first_chunk_delay = 0.0
        self.chunk_times: list[float] = []  # time.monotonic() as each chunk was sent

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> StandinServer:
        if self._httpd is not None:
            return self
        self._stopping.clear()
        httpd = _HTTPServer((self.host, self.port), _Handler)
        httpd.standin = self
        self.port = httpd.server_address[1]
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.02},  # stop() waits one poll: keep teardown fast
            name=f"{self.api_name}-standin",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening and wake slow handlers; later requests are refused."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    @property
    def running(self) -> bool:
        return self._httpd is not None

    def __enter__(self) -> StandinServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """What to put in the client's base URL setting."""
        return self.url

    # -- scripting ---------------------------------------------------------------------
    @staticmethod
    def _check(behaviour: str | Reply) -> str | Reply:
        if not isinstance(behaviour, Reply) and behaviour not in BEHAVIOURS:
            raise ValueError(f"Unknown behaviour {behaviour!r}; choose from {BEHAVIOURS}")
        return behaviour

    def script(self, behaviours: Iterable[str | Reply]) -> StandinServer:
        """Queue behaviours for the next requests, in order; then the default resumes."""
        items = [self._check(b) for b in behaviours]
        with self._lock:
            self._script.extend(items)
        return self

    def set_default(self, behaviour: str | Reply) -> StandinServer:
        with self._lock:
            self._default = self._check(behaviour)
        return self

    def reset(self) -> None:
        """Forget the script, the recorded requests, and go back to answering ``ok``."""
        with self._lock:
            self._script.clear()
            self._requests.clear()
            self._default = "ok"
            self.abandoned.clear()
        self.context_window = None
        self.chunk_words, self.chunk_delay, self.first_chunk_delay = 1, 0.0, 0.0
        self.chunk_times.clear()

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def calls(self) -> list[RecordedRequest]:
        """The model calls among the requests (not metadata, window probes or caches)."""
        return [r for r in self.requests if r.behaviour != "side"]

    def _next_behaviour(self) -> str | Reply:
        with self._lock:
            return self._script.popleft() if self._script else self._default

    # -- provider hooks (subclasses) ---------------------------------------------------
    def route(self, path: str) -> str | None:
        """The model named by a valid path, else None (404)."""
        raise NotImplementedError

    def model_of(self, routed: str, data: Any) -> str:
        """The model a request is for (from the path by default)."""
        return routed

    def invalid(self, data: Any, headers: dict[str, str]) -> tuple[int, str] | None:
        """(status, message) when the request is not what the real API accepts."""
        raise NotImplementedError

    def prompt_of(self, data: dict) -> str:
        raise NotImplementedError

    def side_request(
        self, method: str, path: str, data: Any, headers: dict[str, str] | None = None
    ) -> tuple[int, Any] | None:
        """Answer a request that is not a model call (caches, model metadata), or None."""
        return None

    def too_long_body(self, prompt_tokens: int, window: int) -> dict:
        """The provider's "context length exceeded" error body (a 400)."""
        raise NotImplementedError

    def requested_output(self, data: Any) -> int:
        """The output limit a request asks for (0: none given)."""
        return 0

    def add_usage(self, body: dict, record: RecordedRequest, text: str) -> None:
        """Put the provider's usage block (tokens in, cached, out) into a good answer."""

    def json_request(self, data: dict) -> tuple[bool, dict | None]:
        """(wants JSON, schema if sent)."""
        raise NotImplementedError

    def success_body(self, text: str, model: str) -> dict:
        raise NotImplementedError

    def wants_stream(self, path: str, data: Any) -> bool:
        """Whether the request asks for a streamed answer."""
        return False

    def stream_events(self, pieces: list[str], record: RecordedRequest, text: str) -> list[bytes]:
        """The SSE events (``data: …`` blocks) carrying ``pieces``, usage in the last."""
        raise NotImplementedError

    def error_body(self, status: int, message: str) -> dict:
        raise NotImplementedError

    def blocked_body(self, model: str) -> dict:
        raise NotImplementedError

    # -- request handling --------------------------------------------------------------
    def _send(self, handler: BaseHTTPRequestHandler, status: int, body: Any) -> None:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json; charset=utf-8")
            handler.send_header("Content-Length", str(len(raw)))
            handler.send_header("Connection", "close")
            handler.end_headers()
            handler.wfile.write(raw)
            handler.wfile.flush()
        except OSError:
            pass  # the client gave up (timeout) before we answered
        handler.close_connection = True

    def _ok(self, handler: BaseHTTPRequestHandler, text: str, record: RecordedRequest) -> None:
        """A good answer: one JSON body, or a stream of chunks when one was asked for."""
        if record.stream:
            self._stream(handler, text, record)
        else:
            self._send(handler, 200, self._success(text, record))

    @staticmethod
    def split_words(text: str, size: int) -> list[str]:
        """``text`` in pieces of ``size`` words, whitespace kept (joined they are ``text``)."""
        tokens = re.findall(r"\S+\s*|\s+", text)
        size = max(1, size)
        return ["".join(tokens[i : i + size]) for i in range(0, len(tokens), size)] or [""]

    def _stream(
        self, handler: BaseHTTPRequestHandler, text: str, record: RecordedRequest, *, cut: int = 0
    ) -> None:
        pieces = self.split_words(text, self.chunk_words)
        events = self.stream_events(pieces, record, text)
        try:
            handler.send_response(200)
            handler.send_header("Content-Type", "text/event-stream")
            handler.send_header("Cache-Control", "no-cache")
            if cut:  # promise the whole body, send part of it: the client sees a broken read
                handler.send_header("Content-Length", str(sum(len(e) for e in events)))
                events = events[:cut]
            handler.send_header("Connection", "close")
            handler.end_headers()
            handler.wfile.flush()
            for number, event in enumerate(events):
                delay = self.first_chunk_delay if number == 0 else self.chunk_delay
                if delay and self._wait_or_abandoned(handler, delay):
                    break
                handler.wfile.write(event)
                handler.wfile.flush()
                with self._lock:
                    self.chunk_times.append(time.monotonic())
        except OSError:
            pass  # the client went away mid-stream
        handler.close_connection = True

    def _success(self, text: str, record: RecordedRequest) -> dict:
        body = self.success_body(text, record.model)
        self.add_usage(body, record, text)
        return body

    def _handle(self, handler: BaseHTTPRequestHandler, method: str = "POST") -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in handler.headers.items()}
        try:
            data = json.loads(raw) if raw else None
        except ValueError:
            data = None
        path = handler.path.split("?", 1)[0]
        side = self.side_request(method, path, data, headers)
        if side is not None:
            with self._lock:
                self._requests.append(
                    RecordedRequest(method, handler.path, headers, raw, data, behaviour="side")
                )
            self._send(handler, *side)
            return
        if method != "POST":
            self._send(handler, 404, self.error_body(404, f"No route for {method} {path}"))
            return
        model = self.route(path)
        behaviour = self._next_behaviour() if model is not None else "404"
        record = RecordedRequest(
            method=method,
            path=handler.path,
            headers=headers,
            body=raw,
            json=data,
            behaviour=behaviour if isinstance(behaviour, str) else "reply",
            model=self.model_of(model, data) if model is not None else "",
        )
        if isinstance(data, dict):
            record.prompt = self.prompt_of(data)
            record.wants_json, record.schema = self.json_request(data)
        record.stream = self.wants_stream(path, data)
        with self._lock:
            self._requests.append(record)
        if model is None:
            self._send(handler, 404, self.error_body(404, f"No route for {path}"))
            return
        problem = self.invalid(data, headers)
        if problem is not None:
            self._send(handler, problem[0], self.error_body(*problem))
            return
        window = self.context_window
        if window is not None and behaviour != "too_long":
            asked = standin_tokens(record.prompt) + self.requested_output(data)
            if asked > window:
                self._send(handler, 400, self.too_long_body(asked, window))
                return
        self._respond(handler, behaviour, record)

    def _wait_or_abandoned(self, handler: BaseHTTPRequestHandler, seconds: float) -> bool:
        """ "Generate" for ``seconds``, watching the client's socket as llama.cpp and
        Ollama do; True (recorded in `abandoned`) when the client closed it first."""
        started = time.monotonic()
        sock = handler.connection
        # poll(), not select(): a long test session's descriptors pass select()'s 1024.
        watch = select.poll()
        watch.register(sock, select.POLLIN)
        while True:
            left = seconds - (time.monotonic() - started)
            if left <= 0 or self._stopping.is_set():
                return self._stopping.is_set()
            readable = watch.poll(min(left, 0.05) * 1000)
            if readable:
                try:
                    gone = sock.recv(1, socket.MSG_PEEK) == b""
                except OSError:
                    gone = True
                if gone:
                    with self._lock:
                        self.abandoned.append(round(time.monotonic() - started, 3))
                    return True

    def _answer_text(self, record: RecordedRequest, behaviour: str) -> str:
        if record.wants_json:
            return json_answer(record.prompt, record.schema, behaviour)
        return text_answer(record.prompt, behaviour)

    def _respond(
        self, handler: BaseHTTPRequestHandler, behaviour: str | Reply, record: RecordedRequest
    ) -> None:
        model = record.model
        if isinstance(behaviour, Reply):
            if behaviour.delay and self._wait_or_abandoned(handler, behaviour.delay):
                return
            if behaviour.status != 200:
                message = behaviour.text or f"scripted HTTP {behaviour.status}"
                self._send(handler, behaviour.status, self.error_body(behaviour.status, message))
            else:
                self._ok(handler, behaviour.text or "", record)
            return
        if behaviour == "429":
            self._send(handler, 429, self.error_body(429, "Resource exhausted (stand-in)."))
        elif behaviour == "500":
            self._send(handler, 500, self.error_body(500, "Internal error (stand-in)."))
        elif behaviour == "400":
            self._send(handler, 400, self.error_body(400, "Invalid argument (stand-in)."))
        elif behaviour == "garbage":
            self._send(handler, 200, b"<html>upstream proxy error</html>")
        elif behaviour == "safety":
            self._send(handler, 200, self.blocked_body(model))
        elif behaviour == "disconnect":
            handler.close_connection = True  # no bytes at all: the client sees a dropped socket
        elif behaviour == "too_long":
            window = self.context_window or 8192
            self._send(handler, 400, self.too_long_body(window + 1000, window))
        elif behaviour == "slow":
            if self._wait_or_abandoned(handler, self.slow_seconds):
                return  # the client gave up (or we stopped): generation stops here
            self._ok(handler, self._answer_text(record, "ok"), record)
        elif behaviour == "stream_break":
            if record.stream:
                self._stream(handler, self._answer_text(record, "ok"), record, cut=2)
            else:
                handler.close_connection = True
        else:  # ok, malformed_json, missing_heading
            text = self._answer_text(record, behaviour)
            self._ok(handler, text, record)
