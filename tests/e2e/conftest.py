"""Browser tests: headless Chromium (Debian's package) driven by Playwright."""

from __future__ import annotations

import os

import pytest

from tests.services import chromium_path, unavailable


@pytest.fixture(scope="session")
def browser():
    path = chromium_path()
    if path is None:
        unavailable("Chromium is not installed (apt-get install chromium)")
    # Playwright's sync API runs an event loop in this thread; the ORM calls the tests make
    # around it are ordinary synchronous calls.
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
