"""The turn change log also records a change of a turn's tags or hinge flag.

0039's log was written for the postings cache, whose rows carry only what the term rows
copy (content, seq, round, tokens, and what the selector's turn rule reads). The hit
rows cache (`campaigns.reads.hit_cache`) keeps whole turn rows — tags and the hinge flag
too — under the same stamp, so an update that changes only those columns must count as
a change as well (the admin can make one). Such an update now also rewrites the turn's
term rows (the same rows again): it is rare, and one condition keeps both in step.
"""

from importlib import import_module

from django.db import migrations

PG_TERMS = import_module("campaigns.migrations.0037_turn_terms")
SQLITE_TERMS = import_module("campaigns.migrations.0038_search_from_term_rows")
CHANGES = import_module("campaigns.migrations.0039_turn_changes")

ROW_ONLY = ("tags", "hinge")  # a turn row's columns that the term rows do not copy

PG_CHANGED = PG_TERMS.CHANGED + "".join(
    f" OR o.{column} IS DISTINCT FROM n.{column}" for column in ROW_ONLY
)
SQLITE_CHANGED = SQLITE_TERMS.CHANGED + "".join(
    f" OR OLD.{column} IS NOT NEW.{column}" for column in ROW_ONLY
)
PG_SYNC_FUNCTION = CHANGES.PG_SYNC_FUNCTION.replace(PG_TERMS.CHANGED, PG_CHANGED)
UPDATE_TRIGGER = CHANGES.SQLITE_TRIGGERS[1].replace(
    f"WHEN {SQLITE_TERMS.CHANGED} ", f"WHEN {SQLITE_CHANGED} "
)
if PG_SYNC_FUNCTION == CHANGES.PG_SYNC_FUNCTION or UPDATE_TRIGGER == CHANGES.SQLITE_TRIGGERS[1]:
    raise RuntimeError("0039's change condition was not found")  # pragma: no cover


def forward(apps, schema_editor):
    _install(schema_editor, PG_SYNC_FUNCTION, UPDATE_TRIGGER)


def backward(apps, schema_editor):
    _install(schema_editor, CHANGES.PG_SYNC_FUNCTION, CHANGES.SQLITE_TRIGGERS[1])


def _install(schema_editor, pg_function: str, sqlite_trigger: str) -> None:
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(pg_function, params=None)
    elif vendor == "sqlite":
        schema_editor.execute("DROP TRIGGER IF EXISTS turn_terms_update", params=None)
        schema_editor.execute(sqlite_trigger, params=None)


class Migration(migrations.Migration):
    dependencies = [("campaigns", "0039_turn_changes")]
    operations = [migrations.RunPython(forward, backward)]
