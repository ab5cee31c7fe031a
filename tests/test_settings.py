"""Settings come from the environment; a bad value fails at start, naming the variable."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


PROBE = (
    "import django; django.setup(); from django.conf import settings; "
    "print(settings.DATABASES['default']['ENGINE'], settings.CELERY_TASK_ALWAYS_EAGER)"
)


def _start(**env):
    clean = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    clean.update(env)
    return subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env={**clean, "DJANGO_SETTINGS_MODULE": "babel_site.settings"},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_embedded_default_is_sqlite_with_eager_celery():
    result = _start()
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["django.db.backends.sqlite3", "True"]


def test_a_postgres_url_selects_psycopg_and_a_redis_url_a_real_broker():
    result = _start(
        DATABASE_URL="postgres://u@127.0.0.1:5432/x", REDIS_URL="redis://127.0.0.1:6379/0"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["django.db.backends.postgresql", "False"]


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("DJANGO_DEBUG", "maybe"),
        ("DATABASE_URL", "mysql://x"),
        ("REDIS_URL", "http://127.0.0.1:6379"),
        ("OPENAI_BASE_URL", "ftp://models"),
        ("BABEL_MAX_CONTENT_CHARS", "lots"),
        ("BABEL_LLM_RETRY_BASE_DELAY", "-1"),
        ("BABEL_LLM_BREAKER_SECONDS", "soon"),
    ],
)
def test_a_bad_value_fails_at_start_naming_the_variable(name, value):
    result = _start(**{name: value})
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert name in result.stderr


def test_production_mode_requires_a_secret_key():
    result = _start(DJANGO_DEBUG="false", DJANGO_SECRET_KEY="")
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY" in result.stderr


POOL_PROBE = (
    "import {entry}; from django.conf import settings; db = settings.DATABASES['default']; "
    "print(db['CONN_MAX_AGE'], db.get('OPTIONS', {{}}).get('pool'))"
)


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        # Served by ASGI: each request's sync code has a thread of its own, so connections
        # come from a pool, never left open per thread.
        ("babel_site.asgi", "0 {'min_size': 1, 'max_size': 8, 'timeout': 20}"),
        # Workers and commands (django.setup alone): persistent per-thread connections.
        ("django; django.setup()", "60 None"),
    ],
)
def test_postgres_connections_are_pooled_under_asgi_and_persistent_elsewhere(entry, expected):
    clean = {k: v for k, v in os.environ.items() if not k.startswith("BABEL_PG_POOL")}
    result = subprocess.run(
        [sys.executable, "-c", POOL_PROBE.format(entry=entry)],
        cwd=ROOT,
        env={
            **clean,
            "DJANGO_SETTINGS_MODULE": "babel_site.settings",
            "DATABASE_URL": "postgres://u@127.0.0.1:5432/x",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == expected


@pytest.mark.django_db
def test_sqlite_tests_run_on_a_file_so_live_server_threads_have_their_own_connections():
    # On SQLite's in-memory test database a live server's request threads share one
    # connection, and two of them deadlocked there (the term rows' Python SQL function
    # waiting for the GIL inside SQLite, another thread holding the GIL while waiting
    # for the connection): the suite hung. A file gives each thread its own connection.
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("the test database is PostgreSQL's")
    assert not connection.is_in_memory_db()
    assert Path(connection.settings_dict["NAME"]).is_file()
