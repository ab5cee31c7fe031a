"""Start a real Celery worker process against the test database and real Redis."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]
PROCESSES: dict[str, subprocess.Popen] = {}  # queue → its worker process (to kill one)


def test_database_url() -> str:
    """A postgres:// URL for the database pytest-django created for this run."""
    db = settings.DATABASES["default"]
    name = connection.settings_dict["NAME"]
    user = db.get("USER") or ""
    password = db.get("PASSWORD") or ""
    auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    host = db.get("HOST") or "127.0.0.1"
    port = db.get("PORT") or 5432
    return f"postgres://{auth}{host}:{port}/{name}"


@contextlib.contextmanager
def celery_worker(redis_url: str, *, extra_env: dict[str, str] | None = None, timeout: float = 60):
    """Run `celery -A babel_site worker` on its own queue until the block ends.

    Yields the queue name; send tasks with ``.apply_async(queue=queue)``.
    """
    queue = f"babel-test-{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        "DATABASE_URL": test_database_url(),
        "REDIS_URL": redis_url,
        "PYTHONPATH": str(ROOT),
        **(extra_env or {}),
    }
    log_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"{queue}.log"
    log = log_path.open("w")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "babel_site",
            "worker",
            "--pool=solo",
            "--concurrency=1",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "-Q",
            queue,
            "--loglevel=INFO",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    PROCESSES[queue] = process
    try:
        deadline = time.monotonic() + timeout
        while "ready." not in log_path.read_text():
            if process.poll() is not None:
                raise RuntimeError(f"worker exited early:\n{log_path.read_text()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"worker not ready after {timeout}s:\n{log_path.read_text()}")
            time.sleep(0.2)
        yield queue
    finally:
        PROCESSES.pop(queue, None)
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def wait_for(predicate, *, timeout: float = 30, interval: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s")
