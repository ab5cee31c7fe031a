"""Re-create SQLite's pack-version triggers on a table a migration has rebuilt.

SQLite cannot alter most of a table in place, so Django's schema editor copies it into a
new table and drops the old one — and the triggers on it go too (PostgreSQL keeps them).
A migration that adds a constraint or a column to a table listed in 0011's ``CHILDREN``
ends with ``reinstall_pack_version_triggers("campaigns_<table>")``; a test checks that
every such trigger exists after all migrations.
"""

from __future__ import annotations

import importlib

from django.db import migrations

_PACK_VERSION = importlib.import_module("campaigns.migrations.0011_speed_experiment_pack_version")


def _statements_for(table: str) -> list[str]:
    return [s for s in _PACK_VERSION._sqlite_forward() if f" ON {table} " in s]


def reinstall_pack_version_triggers(table: str) -> migrations.RunPython:
    def forward(apps, schema_editor):
        if schema_editor.connection.vendor != "sqlite":
            return
        for statement in _statements_for(table):
            name = statement.split()[2]
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {name}")
            schema_editor.execute(statement)

    return migrations.RunPython(forward, migrations.RunPython.noop, elidable=False)
