"""The permission matrix every console page is checked against."""

from __future__ import annotations

from tests.campaigns.console.conftest import HX, is_fragment, is_login_redirect

# What each persona gets for a page they may read: owner and staff and the linked
# player read (the player their own view), a stranger gets 404, anonymous the login page.
READ = {"owner": 200, "staff": 200, "player": 200, "stranger": 404, "anonymous": "login"}


def check_get(client, url, expected, *, marker: str | None = None):
    """GET plainly and with HX-Request; the htmx answer is only the fragment."""
    plain = client.get(url)
    htmx = client.get(url, **HX)
    if expected == "login":
        assert is_login_redirect(plain), plain.status_code
        assert is_login_redirect(htmx), htmx.status_code
        return plain, htmx
    assert plain.status_code == expected, (url, plain.status_code)
    assert htmx.status_code == expected, (url, htmx.status_code)
    if expected == 200:
        assert "<html" in plain.content.decode()
        assert is_fragment(htmx), htmx.content[:200]
        if marker:
            assert marker in htmx.content.decode()
            assert marker in plain.content.decode()
    return plain, htmx
