"""The site is served under ASGI: uvicorn (`make demo`, with --reload) and gunicorn's uvicorn
workers (`make serve`, the production profile) answer pages and static files, the static
files through WhiteNoise with an async body (no sync-iterator warning from Django)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SYNC_ITERATOR_WARNING = "must consume synchronous iterators"

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _get(url: str, **headers):
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def _serve(command: list[str], env: dict, port: int, tmp_path: Path):
    """Start the server and wait until it listens: (process, base URL, log file)."""
    log = tmp_path / "server.log"
    with open(log, "wb") as out:
        server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        if server.poll() is not None:
            pytest.fail(f"the server exited: {log.read_text()}")
        try:
            with socket.create_connection(("127.0.0.1", port), 0.5):
                break
        except OSError:
            if time.monotonic() > deadline:
                server.kill()
                pytest.fail(f"the server did not listen within 60 s: {log.read_text()}")
            time.sleep(0.2)
    return server, base, log


def _stop(server: subprocess.Popen) -> None:
    server.terminate()
    try:
        server.wait(timeout=15)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def _environment(tmp_path: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    env.update(DATABASE_URL=f"sqlite:///{tmp_path / 'asgi.sqlite3'}", **extra)
    return env


# fmt: off
COMMANDS = {
    # `make demo`'s server (DEBUG, reloading).
    "uvicorn --reload": lambda port: (
        [sys.executable, "-m", "uvicorn", "babel_site.asgi:application", "--host", "127.0.0.1",
         "--port", str(port), "--reload", "--reload-dir", "babel_site",
         "--timeout-graceful-shutdown", "3"],
        {"DJANGO_DEBUG": "true"},
    ),
    # `make serve`'s server: the production profile over plain HTTP on loopback.
    "gunicorn + uvicorn workers": lambda port: (
        [sys.executable, "-m", "gunicorn", "babel_site.asgi:application",
         "-k", "uvicorn_worker.UvicornWorker", "-b", f"127.0.0.1:{port}", "-w", "1"],
        {"DJANGO_DEBUG": "false", "DJANGO_SECRET_KEY": "asgi-test-" + "k" * 50,
         "BABEL_SSL_REDIRECT": "false", "BABEL_SECURE_COOKIES": "false"},
    ),
}
# fmt: on


@pytest.mark.parametrize("server_kind", list(COMMANDS))
def test_the_asgi_server_answers_a_page_and_a_static_file(server_kind, tmp_path):
    port = _free_port()
    command, extra = COMMANDS[server_kind](port)
    server, base, log = _serve(command, _environment(tmp_path, **extra), port, tmp_path)
    try:
        status, headers, body = _get(f"{base}/accounts/login/")
        assert status == 200, body[:500]
        assert b'name="username"' in body and b'name="password"' in body
        assert "script-src 'self'" in headers.get("Content-Security-Policy", "")

        css = (ROOT / "static" / "css" / "babel.css").read_bytes()
        status, headers, body = _get(f"{base}/static/css/babel.css")
        assert (status, body) == (200, css)
        assert headers["Content-Type"].startswith("text/css")
        etag = headers["ETag"]  # WhiteNoise's validators: a repeat visit costs no body
        status, _, body = _get(f"{base}/static/css/babel.css", **{"If-None-Match": etag})
        assert (status, body) == (304, b"")
        status, _, body = _get(f"{base}/static/css/babel.css", Range="bytes=0-9")
        assert (status, body) == (206, css[:10])

        status, _, _ = _get(f"{base}/static/css/no-such-file.css")
        assert status == 404
    finally:
        _stop(server)
    output = log.read_text()
    assert SYNC_ITERATOR_WARNING not in output, output
    assert "Traceback" not in output, output


@pytest.mark.django_db(transaction=True)
def test_open_live_streams_hold_no_database_connection(tmp_path, settings):
    """Under ASGI the connections come from a pool (here two per process). Four open live
    streams must not hold them: each gives its connection back before streaming, so a page
    asked for afterwards is answered (an exhausted pool would keep it waiting 20 s, then
    fail)."""
    from django.test import Client

    from tests.factories import make_experiment, make_user
    from tests.services import database_is_postgres, unavailable

    if not database_is_postgres():
        unavailable("the connection pool is PostgreSQL's (DATABASE_URL=postgres://...)")
    owner = make_user("pool_owner")
    experiment = make_experiment(owner=owner)
    client = Client()
    client.force_login(owner)
    cookie = f"sessionid={client.cookies['sessionid'].value}"
    db = settings.DATABASES["default"]  # the test database, which the server shares
    url = (
        f"postgres://{db['USER']}:{db.get('PASSWORD') or ''}@{db['HOST'] or '127.0.0.1'}:"
        f"{db['PORT'] or 5432}/{db['NAME']}"
    )
    port = _free_port()
    command, extra = COMMANDS["gunicorn + uvicorn workers"](port)
    env = {
        **_environment(tmp_path, **extra),
        "DATABASE_URL": url,
        "BABEL_PG_POOL_SIZE": "2",
        "DJANGO_SECRET_KEY": settings.SECRET_KEY,  # the session was signed with it
    }
    server, base, log = _serve(command, env, port, tmp_path)
    streams = []
    try:
        for _ in range(4):
            stream = socket.create_connection(("127.0.0.1", port), timeout=10)
            stream.sendall(
                f"GET /campaigns/{experiment.pk}/live/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                f"Accept: text/event-stream\r\nCookie: {cookie}\r\n\r\n".encode()
            )
            received = b""
            while b"event: hello" not in received:
                chunk = stream.recv(4096)
                assert chunk, received
                received += chunk
            assert received.startswith(b"HTTP/1.1 200"), received[:200]
            streams.append(stream)
        status, _, body = _get(f"{base}/campaigns/{experiment.pk}/", Cookie=cookie)
        assert status == 200, body[:500]
        assert experiment.name.encode() in body
    finally:
        for stream in streams:
            stream.close()
        _stop(server)
    assert "PoolTimeout" not in log.read_text()
