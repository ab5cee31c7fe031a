"""Instructions a pack costs, counted by Valgrind: `manage.py bench_instructions`.

`make bench` times packs in milliseconds, and on a shared machine the same code's
medians move by 2× within minutes (README). The number of instructions a pack executes
does not: this command counts them with Valgrind's callgrind for the two campaign sizes
and the two packs `make bench` times (the same pack rebuilt, and a pack right after a
new turn), and prints the instructions per pack with the 50,000-to-1,000 ratios. Two runs
of the same code on the same data print the same numbers, so a change can be weighed
whatever the machine is doing. It counts this process only: on PostgreSQL the server's
own work is not in it (its wall time is in `make bench`).

How: the campaigns are built once (seeded, `campaigns.bench`) and committed. Each size
is counted in a child process under ``valgrind --tool=callgrind`` on a copy of that
database (SQLite: a copy of the file; PostgreSQL: a database made from it as a
template), with Python's hash seed fixed and the instrumentation switched on only around
each pack (``callgrind_control``). The child warms the process (three rebuilt packs and
three packs after a new turn per role), counts ``--packs`` rebuilt packs per role, dumps
that count, then counts ``--packs`` packs per role each after a new turn. Everything is
deleted afterwards. Needs Debian's ``valgrind`` package.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlparse

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.test.utils import override_settings

from campaigns import bench
from campaigns.management.commands.bench_context import INPUT
from campaigns.models import Experiment
from campaigns.services.context import pack_for_role

MODES = ("rebuilt", "new turn")
WARM_PACKS = 3
_TOTALS = re.compile(r"^totals:\s*(\d+)", re.MULTILINE)


class Command(BaseCommand):
    help = "Count the instructions a pack executes (Valgrind's callgrind), per size and kind."

    def add_arguments(self, parser):
        parser.add_argument("--sizes", nargs=2, type=int, default=[1000, 50000])
        parser.add_argument("--packs", type=int, default=4, help="Counted packs per role.")
        # A child's work, under Valgrind: PACKS EXPERIMENT_ID.
        parser.add_argument("--child", nargs=2, type=int, help="(internal)")

    def handle(self, *args, **options):
        with override_settings(DEBUG=False):
            if options["child"]:
                packs, experiment_id = options["child"]
                _child(experiment_id, packs)
                return
            self._run(options["sizes"], options["packs"])

    def _run(self, sizes: list[int], packs: int) -> None:
        if packs < 1:
            raise CommandError("--packs must be at least 1.")
        if len(set(sizes)) != 2 or min(sizes) < 8:
            raise CommandError("--sizes takes two different campaign sizes of at least 8 turns.")
        missing = [tool for tool in ("valgrind", "callgrind_control") if not shutil.which(tool)]
        if missing:
            raise CommandError(
                f"{' and '.join(missing)} not found: install Debian's valgrind package."
            )
        if connection.vendor not in ("sqlite", "postgresql"):  # pragma: no cover
            raise CommandError(f"Unsupported database: {connection.vendor}.")
        self.stderr.write(f"building campaigns of {sizes[0]} and {sizes[1]} turns…")
        campaigns = {}
        try:
            for size in sizes:
                campaigns[size] = bench.create_campaign(size).pk
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("VACUUM ANALYZE campaigns_turn")
                    cursor.execute("VACUUM ANALYZE campaigns_turn_terms")
            counts = {}
            for size in sizes:
                counted = self._count(size, packs, campaigns[size])
                counts.update({(size, mode): counted[mode] for mode in MODES})
        finally:
            Experiment.objects.filter(pk__in=campaigns.values()).delete()
        small, large = sizes
        self.stdout.write(
            f"database: {connection.vendor}; instructions a pack executes in this process "
            f"(callgrind), mean of {packs} packs per role over {len(bench.ROLES)} roles"
        )
        header = f"{'pack':<10} {small:>12,} turns {large:>12,} turns  {'ratio':>6}"
        self.stdout.write(header)
        self.stdout.write("-" * len(header))
        for mode in MODES:
            few, many = counts[(small, mode)], counts[(large, mode)]
            self.stdout.write(
                f"{mode:<10} {few / 1e6:>11.2f}M{'':6} {many / 1e6:>11.2f}M{'':6}  "
                f"{many / few:>5.2f}×"
            )

    def _count(self, size: int, packs: int, experiment_id: int) -> dict[str, float]:
        """Instructions per pack of each kind, in a child under callgrind, on a copy of
        the database."""
        self.stderr.write(f"counting packs at {size:,} turns…")
        with _database_copy() as url, tempfile.TemporaryDirectory() as scratch:
            out = Path(scratch) / "callgrind.out"
            done = subprocess.run(
                [
                    "valgrind",
                    "--tool=callgrind",
                    "--instr-atstart=no",
                    f"--callgrind-out-file={out}",
                    sys.executable,
                    str(Path(settings.BASE_DIR) / "manage.py"),
                    "bench_instructions",
                    "--child",
                    str(packs),
                    str(experiment_id),
                ],
                env={**os.environ, "DATABASE_URL": url, "PYTHONHASHSEED": "0"},
                capture_output=True,
                text=True,
                check=False,
            )
            # Part 1 (the dump between the two kinds) holds the rebuilt packs, the final
            # part the packs after a new turn.
            parts = {MODES[0]: Path(f"{out}.1"), MODES[1]: out}
            totals = {mode: _totals(path) for mode, path in parts.items()}
        if done.returncode != 0 or None in totals.values():
            raise CommandError(f"the counting child failed ({done.returncode}):\n{done.stderr}")
        return {mode: total / (packs * len(bench.ROLES)) for mode, total in totals.items()}


def _totals(path: Path) -> int | None:
    """The instructions a callgrind output file counts (its ``totals:`` line)."""
    if not path.exists():
        return None
    found = _TOTALS.search(path.read_text(errors="replace"))
    return int(found.group(1)) if found else None


class _database_copy:
    """A copy of the current database for one child; its URL, dropped on exit."""

    def __enter__(self) -> str:
        self.settings = connection.settings_dict
        if connection.vendor == "sqlite":
            handle, self.path = tempfile.mkstemp(suffix=".sqlite3")
            os.close(handle)
            source, target = sqlite3.connect(self.settings["NAME"]), sqlite3.connect(self.path)
            try:
                source.backup(target)  # consistent, whatever the journal mode
            finally:
                source.close()
                target.close()
            return f"sqlite:///{self.path}"
        # PostgreSQL: CREATE DATABASE … TEMPLATE wants no other session on the template.
        self.name = f"{self.settings['NAME']}_instructions_{os.getpid()}"
        connection.close()
        with self._server() as server:
            server.execute(f'CREATE DATABASE "{self.name}" TEMPLATE "{self.settings["NAME"]}"')
        # PostgreSQL is reached only through DATABASE_URL: the same URL, the copy's name.
        return urlparse(os.environ["DATABASE_URL"])._replace(path=f"/{self.name}").geturl()

    def __exit__(self, *exc_info) -> None:
        if connection.vendor == "sqlite":
            Path(self.path).unlink(missing_ok=True)
            return
        with self._server() as server:
            server.execute(f'DROP DATABASE IF EXISTS "{self.name}"')

    def _server(self):
        import psycopg

        return psycopg.connect(
            dbname="postgres",
            user=self.settings.get("USER") or None,
            password=self.settings.get("PASSWORD") or None,
            host=self.settings.get("HOST") or None,
            port=self.settings.get("PORT") or None,
            autocommit=True,
        )


def _child(experiment_id: int, packs: int) -> None:
    """Under callgrind: warm the process, count ``packs`` rebuilt packs per role, dump,
    then count ``packs`` packs per role each after a new turn."""
    experiment = Experiment.objects.get(pk=experiment_id)

    def build(role: str) -> None:
        pack_for_role(experiment=experiment, role=role, input_text=INPUT, use_cache=False)

    for role in bench.ROLES:
        rng = random.Random(f"warm:{role}")
        for _ in range(WARM_PACKS):
            build(role)
        for _ in range(WARM_PACKS):
            bench.append_turn(experiment, rng)
            build(role)
    for role in bench.ROLES:
        build(role)  # the role's pack as of now, so each counted one is that pack again
        for _ in range(packs):
            _callgrind("-i", "on")
            build(role)
            _callgrind("-i", "off")
    _callgrind("-d")  # part 1: the rebuilt packs
    for role in bench.ROLES:
        rng = random.Random(f"count:{role}")
        for _ in range(packs):
            bench.append_turn(experiment, rng)
            _callgrind("-i", "on")
            build(role)
            _callgrind("-i", "off")


def _callgrind(*command: str) -> None:
    """Tell callgrind, which runs this process, to do ``command`` (``-i on``, ``-d``…)."""
    subprocess.run(
        ["callgrind_control", *command, str(os.getpid())],
        stdout=subprocess.DEVNULL,
        check=True,
    )
