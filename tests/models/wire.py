"""A recording proxy in front of a real model server: every request a test's agents send,
and every answer, as they crossed the wire (the server itself keeps no such log)."""

from __future__ import annotations

import http.client
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse


@dataclass
class Exchange:
    method: str
    path: str
    body: dict | None
    status: int
    answer: str
    seconds: float = 0.0


@dataclass
class Wire:
    """Forwards ``127.0.0.1:<port>`` to ``upstream``; ``exchanges`` is what crossed it."""

    upstream: str
    exchanges: list[Exchange] = field(default_factory=list)

    def __post_init__(self):
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def chat_requests(self) -> list[Exchange]:
        with self._lock:
            return [e for e in self.exchanges if e.path.endswith("/chat/completions")]

    def __enter__(self) -> Wire:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self):
        wire = self
        target = urlparse(self.upstream)

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def _forward(self):
                import time

                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                started = time.monotonic()
                upstream = http.client.HTTPConnection(target.hostname, target.port, timeout=600)
                headers = {
                    k: v
                    for k, v in self.headers.items()
                    if k.lower() not in {"host", "connection", "accept-encoding"}
                }
                try:
                    upstream.request(self.command, self.path, body=raw or None, headers=headers)
                    response = upstream.getresponse()
                    data = response.read()
                    status = response.status
                    content_type = response.getheader("Content-Type", "application/json")
                except OSError as exc:  # the server went away: say so, as a 502
                    data, status, content_type = str(exc).encode(), 502, "text/plain"
                finally:
                    upstream.close()
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                with wire._lock:
                    wire.exchanges.append(
                        Exchange(
                            self.command,
                            self.path,
                            body,
                            status,
                            data.decode("utf-8", "replace"),
                            time.monotonic() - started,
                        )
                    )
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _forward

        return Handler
