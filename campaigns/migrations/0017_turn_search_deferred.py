"""PostgreSQL: an import leaves full-text indexing of its turns to a background task.

Maintaining the GIN expression index row by row was most of a large import's time (the
to_tsvector of every row, inside the COPY). Turns now carry ``search_indexed`` (default
true, so every other writer is unchanged) and the GIN index covers only indexed rows.
The importer writes its rows with false; after commit `campaigns.tasks.index_turn_search`
flips them in batches. Until then searches also scan the experiment's not-yet-indexed
rows through a small partial btree (empty in the steady state), so a search gives the
same rows before and after the task (`campaigns.reads.packs._PG_NEWEST_MATCHES`).

A raw column, like the index itself (migration 0003): the ORM never reads it, and
SQLite (whose FTS5 table the importer fills in one statement) does not have it.
"""

from django.db import migrations

PG_FORWARD = [
    "ALTER TABLE campaigns_turn ADD COLUMN IF NOT EXISTS search_indexed boolean NOT NULL "
    "DEFAULT true",
    "DROP INDEX IF EXISTS turn_content_fts",
    "CREATE INDEX turn_content_fts ON campaigns_turn "
    "USING GIN (to_tsvector('english'::regconfig, content)) WITH (fastupdate = off) "
    "WHERE search_indexed",
    "CREATE INDEX turn_search_pending ON campaigns_turn (experiment_id, seq) "
    "WHERE NOT search_indexed",
]
PG_BACKWARD = [
    "UPDATE campaigns_turn SET search_indexed = true WHERE NOT search_indexed",
    "DROP INDEX IF EXISTS turn_search_pending",
    "DROP INDEX IF EXISTS turn_content_fts",
    "CREATE INDEX turn_content_fts ON campaigns_turn "
    "USING GIN (to_tsvector('english'::regconfig, content)) WITH (fastupdate = off)",
    "ALTER TABLE campaigns_turn DROP COLUMN IF EXISTS search_indexed",
]


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in PG_FORWARD:
            schema_editor.execute(statement)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in PG_BACKWARD:
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("campaigns", "0016_retrieval")]
    operations = [migrations.RunPython(forward, backward)]
