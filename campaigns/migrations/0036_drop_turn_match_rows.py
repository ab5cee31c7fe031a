"""PostgreSQL: drop ``babel_turn_match_rows`` (migration 0033), which nothing calls.

Ranked retrieval and ``/search`` read every query word's matches from one call of
``babel_turn_postings`` (migrations 0034 and 0035); the newest-matches search that called
``babel_turn_match_rows`` once per word is gone. Migrating backwards restores it from
migration 0033's own text.
"""

from importlib import import_module

from django.db import migrations

DROP_MATCH_ROWS = (
    "DROP FUNCTION IF EXISTS babel_turn_match_rows(bigint, text, integer, integer, integer)"
)


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP_MATCH_ROWS, params=None)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        previous = import_module("campaigns.migrations.0033_turn_match_rows")
        schema_editor.execute(previous.MATCH_ROWS_FUNCTION, params=None)


class Migration(migrations.Migration):
    dependencies = [("campaigns", "0035_turn_search_index_per_experiment")]
    operations = [migrations.RunPython(forward, backward)]
