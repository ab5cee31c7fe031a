"""A bounded load test: `manage.py loadtest [--users 20 --seconds 30]` (`make loadtest`).

Seeds a synthetic campaign with an owner and four linked players (token and session
logins) in the configured database (PostgreSQL; SQLite only with ``--allow-sqlite``),
starts gunicorn with uvicorn (ASGI) workers, as `make serve` does, on a free loopback
port, warms each worker up with unrecorded requests, runs locust headless — N users
reading pages, the turn list and their context pack, the owner posting turns — for a
fixed time, stops both processes, removes what it created, and writes a report:
requests, failures, p50 and p95 per endpoint. Exits non-zero if any request failed.

Nothing listens beyond 127.0.0.1, and every run ends by itself (``--seconds``, plus
locust's own stop timeout and a hard kill of gunicorn).
"""

from __future__ import annotations

import csv
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.urls import Resolver404, resolve
from rest_framework.authtoken.models import Token

from campaigns import bench
from campaigns.models import Participant

LOCUSTFILE = Path(__file__).resolve().parents[2] / "loadtest" / "locustfile.py"
PREFIX = "loadtest-"
# Console pages read when this build has them (`{id}` is the campaign).
CANDIDATE_PAGES = ("/", "/campaigns/{id}/", "/campaigns/{id}/lore/", "/campaigns/{id}/memory/")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _pages(experiment_id: int) -> list[str]:
    pages = []
    for page in CANDIDATE_PAGES:
        try:
            resolve(page.format(id=experiment_id))
        except Resolver404:
            continue
        pages.append(page)
    return pages


class Command(BaseCommand):
    help = "Bounded locust load test of gunicorn + the database (loopback only)."

    def add_arguments(self, parser):
        parser.add_argument("--users", type=int, default=20)
        parser.add_argument("--seconds", type=int, default=30)
        parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
        parser.add_argument("--turns", type=int, default=5000, help="campaign size")
        parser.add_argument("--report", default="loadtest-report.md")
        parser.add_argument("--allow-sqlite", action="store_true")

    def handle(self, *args, users, seconds, workers, turns, report, allow_sqlite, **options):
        if connection.vendor != "postgresql" and not allow_sqlite:
            raise CommandError("Set DATABASE_URL to PostgreSQL (or pass --allow-sqlite).")
        if not (1 <= users <= 500 and 1 <= seconds <= 600 and 1 <= workers <= 16):
            raise CommandError("--users 1–500, --seconds 1–600, --workers 1–16.")
        experiment, accounts = self._seed(turns)
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        env = {**os.environ, "BABEL_LT_EXPERIMENT": str(experiment.pk)}
        # The server is the production profile, reached over plain HTTP on loopback (no TLS
        # proxy here): no redirect to HTTPS, and cookies that travel over HTTP.
        env.setdefault("BABEL_SSL_REDIRECT", "false")
        env.setdefault("BABEL_SECURE_COOKIES", "false")
        env["BABEL_LT_ACCOUNTS"] = json.dumps(accounts)
        env["BABEL_LT_PAGES"] = json.dumps(_pages(experiment.pk))
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "babel_site.asgi:application",
             "-k", "uvicorn_worker.UvicornWorker", "-b", f"127.0.0.1:{port}",
             "-w", str(workers), "--log-level", "warning"],
            cwd=settings.BASE_DIR, env=env,
        )  # fmt: skip
        try:
            self._wait_for(url, server)
            self._warm_up(url, experiment.pk, accounts, workers)
            with tempfile.TemporaryDirectory() as tmp:
                prefix = str(Path(tmp) / "stats")
                subprocess.run(
                    [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless",
                     "-u", str(users), "-r", str(max(1, users // 2)), "-t", f"{seconds}s",
                     "--host", url, "--csv", prefix, "--only-summary", "--stop-timeout", "5",
                     "--exit-code-on-error", "0"],
                    cwd=settings.BASE_DIR, env=env, check=True, timeout=seconds + 120,
                    stdout=subprocess.DEVNULL,
                )  # fmt: skip
                with open(f"{prefix}_stats.csv", encoding="utf-8") as stats:
                    rows = list(csv.DictReader(stats))
        finally:
            server.terminate()
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
            experiment.delete()
            get_user_model().objects.filter(username__startswith=PREFIX).delete()
        failures = self._report(rows, report, users, seconds, workers, turns)
        if failures:
            raise CommandError(f"{failures} request(s) failed; see {report}.")

    def _seed(self, turns: int):
        User = get_user_model()
        User.objects.filter(username__startswith=PREFIX).delete()
        experiment = bench.create_campaign(turns)
        accounts = []
        for role in bench.ROLES:
            username = f"{PREFIX}{role.lower()}"
            password = secrets.token_urlsafe(16)
            user = User.objects.create_user(username=username, password=password)
            if role == "DM":
                experiment.owner = user
                experiment.save(update_fields=["owner"])
            else:
                Participant.objects.filter(experiment=experiment, role=role).update(user=user)
            accounts.append(
                {
                    "username": username,
                    "password": password,
                    "token": Token.objects.create(user=user).key,
                    "role": role,
                    "owner": role == "DM",
                    "round": (turns - 1) // bench.TURNS_PER_ROUND + 1,
                }
            )
        return experiment, accounts

    def _wait_for(self, url: str, server: subprocess.Popen) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if server.poll() is not None:
                raise CommandError("gunicorn exited before it served a request.")
            try:
                urllib.request.urlopen(f"{url}/accounts/login/", timeout=2).read()
                return
            except OSError:
                time.sleep(0.3)
        raise CommandError("gunicorn did not answer within 30 s.")

    def _warm_up(self, url: str, experiment_id: int, accounts: list[dict], workers: int) -> None:
        """Unrecorded requests first: each worker loads the tokenizer and compiles its
        queries once; the run measures the steady state, not process start-up."""
        for account in accounts * (2 * workers):
            request = urllib.request.Request(
                f"{url}/api/experiments/{experiment_id}/context/{account['role']}/",
                headers={"Authorization": f"Token {account['token']}"},
            )
            urllib.request.urlopen(request, timeout=60).read()

    def _report(self, rows, path, users, seconds, workers, turns) -> int:
        lines = [
            f"# Load test: {users} users, {seconds} s, gunicorn ×{workers} uvicorn workers, "
            f"{connection.vendor}, campaign of {turns} turns",
            "",
            "| endpoint | requests | failures | p50 ms | p95 ms | req/s |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        failures = 0
        for row in rows:
            name = row["Name"] if row["Type"] else "**all**"
            if row["Name"] == "Aggregated":
                name = "**all**"
            else:
                failures += int(row["Failure Count"])
            lines.append(
                f"| {row['Type']} {name} | {row['Request Count']} | {row['Failure Count']} | "
                f"{row['50%']} | {row['95%']} | {float(row['Requests/s']):.1f} |"
            )
        text = "\n".join(lines) + "\n"
        Path(path).write_text(text, encoding="utf-8")
        self.stdout.write(text)
        return failures
