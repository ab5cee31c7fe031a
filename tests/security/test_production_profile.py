"""Finding 4: DJANGO_DEBUG defaulted to true with a public key, an unknown URL showed the
debug 404 with every URL pattern, and `check --deploy` warned. The production profile is
now the default and is what the README's deployment section starts."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION = {
    "DJANGO_DEBUG": "false",
    "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
    "ALLOWED_HOSTS": "babel.example.org",
}


def manage(*args, **env):
    base = {
        k: v
        for k, v in os.environ.items()
        # Not the browser tests' async switch either: a deployment never sets it.
        if k
        not in {
            "DJANGO_DEBUG",
            "DJANGO_SECRET_KEY",
            "DATABASE_URL",
            "REDIS_URL",
            "DJANGO_ALLOW_ASYNC_UNSAFE",
        }
    }
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_production_profile_passes_check_deploy():
    result = manage("check", "--deploy", "--fail-level", "WARNING", **PRODUCTION)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_debug_is_off_unless_asked_for_and_then_a_real_key_is_required(tmp_path):
    if (ROOT / ".env").exists():
        pytest.skip("a local .env (from `make demo`) sets development mode for this checkout")
    result = manage("check")
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY" in result.stderr


def test_production_settings_turn_on_https_hsts_and_secure_cookies():
    probe = (
        "from django.conf import settings as s; "
        "print(s.DEBUG, s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS > 0, "
        "s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_PROXY_SSL_HEADER)"
    )
    result = manage(
        "shell", "-c", probe, BABEL_PROXY_SSL_HEADER="X-Forwarded-Proto: https", **PRODUCTION
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1].split() == [
        "False",
        "True",
        "True",
        "True",
        "True",
        "('HTTP_X_FORWARDED_PROTO',",
        "'https')",
    ]


@pytest.mark.parametrize("value", ["X-Forwarded-Proto", ": https", "nonsense"])
def test_a_malformed_proxy_header_fails_at_start_naming_it(value):
    result = manage("check", BABEL_PROXY_SSL_HEADER=value, **PRODUCTION)
    assert result.returncode != 0
    assert "BABEL_PROXY_SSL_HEADER" in result.stderr


@pytest.mark.django_db
def test_an_unknown_page_is_a_plain_404_without_url_patterns(settings):
    settings.DEBUG = False
    response = Client().get("/no/such/page/")
    assert response.status_code == 404
    assert b"URLconf" not in response.content and b"api/" not in response.content
    assert b"There is nothing here." in response.content


@pytest.mark.django_db
def test_an_unknown_api_path_is_a_json_404(settings):
    settings.DEBUG = False
    response = Client().get("/api/no/such/thing/")
    assert response.status_code == 404
    assert response.json() == {"detail": "There is nothing here."}


def test_a_server_error_is_a_page_without_settings(rf):
    from babel_site.errors import server_error

    html = server_error(rf.get("/campaigns/1/")).content
    api = server_error(rf.get("/api/experiments/1/"))
    assert b"Server error" in html and b"DATABASE_URL" not in html
    assert api.status_code == 500 and api["Content-Type"] == "application/json"


@pytest.mark.django_db
def test_pages_carry_a_content_security_policy_without_inline_scripts():
    response = Client().get("/accounts/login/")
    policy = response["Content-Security-Policy"]
    directives = dict(
        (part.split()[0], part.split()[1:]) for part in policy.split(";") if part.strip()
    )
    assert directives["script-src"] == ["'self'"]
    assert directives["object-src"] == ["'none'"]
    assert directives["frame-ancestors"] == ["'none'"]


INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.IGNORECASE)
INLINE_HANDLER = re.compile(r"\son[a-z]+\s*=|\shx-on[:-]", re.IGNORECASE)


def test_no_template_carries_inline_script_or_event_handlers():
    """Under the CSP they would not run; here they would not even be written."""
    offenders = []
    for template in (ROOT / "templates").rglob("*.html"):
        text = template.read_text()
        if INLINE_SCRIPT.search(text) or INLINE_HANDLER.search(text):
            offenders.append(str(template.relative_to(ROOT)))
    assert offenders == []
