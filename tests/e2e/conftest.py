"""Browser tests: headless Chromium (Debian's package) driven by Playwright."""

from __future__ import annotations

import os

import pytest

from tests.services import chromium_path, unavailable


@pytest.fixture(scope="module")
def browser():
    path = chromium_path()
    if path is None:
        unavailable("Chromium is not installed (apt-get install chromium)")
    # Playwright's sync API runs an event loop in this thread; the ORM calls the tests make
    # around it are ordinary synchronous calls. One browser per module, not per session:
    # while Playwright is open this thread counts as inside a running event loop, so a
    # later module's test that calls an async view through Django's test client (which
    # refuses to run inside a loop) would fail or pass by the order the tests ran in.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=path,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


@pytest.fixture
def asgi_server(transactional_db):
    """The site under uvicorn (ASGI) in a thread of this process, on a free 127.0.0.1 port:
    what a page that holds a stream open needs (pytest-django's live server is WSGI, which
    would send a stream whole, at its end). It shares this process's test database and live
    broker. Each request runs in a thread of its own with a connection of its own: on
    SQLite too, whose test database is a file (`settings.py`), not the in-memory one
    connection that threads could not share safely."""
    import socket
    import threading
    import time
    from types import SimpleNamespace

    import uvicorn
    from django.core.asgi import get_asgi_application
    from django.db import connections

    # Each request's thread opens its own connection: close it at the request's end, so no
    # connection outlives the test (the test database is dropped after the run).
    saved_age = connections.settings["default"].get("CONN_MAX_AGE")
    connections.settings["default"]["CONN_MAX_AGE"] = 0
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = uvicorn.Config(
        get_asgi_application(),
        host="127.0.0.1",
        port=port,
        lifespan="off",
        log_level="warning",
        timeout_graceful_shutdown=2,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="asgi-live-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            pytest.fail("the ASGI live server did not start")
        time.sleep(0.05)
    yield SimpleNamespace(url=f"http://127.0.0.1:{port}")
    server.should_exit = True
    thread.join(timeout=15)
    connections.settings["default"]["CONN_MAX_AGE"] = saved_age
