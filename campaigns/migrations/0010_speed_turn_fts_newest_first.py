"""SQLite full-text rows keyed by the negated turn id, so FTS5 walks newest first lazily.

FTS5 reads a doclist lazily only in ascending rowid order; a descending walk loads every
match of the experiment's token first (the experiment's whole history, 1.3 ms at 50,000
turns). With rowid = -id, ascending is newest first and a search with a LIMIT stops at
its Nth hit (`campaigns.reads.search.search_turn_rows`). PostgreSQL: nothing changes.
"""

from django.db import migrations

BODY = "'xexp' || {row}.experiment_id || ' ' || {row}.content"
DROP = [
    "DROP TRIGGER IF EXISTS campaigns_turn_fts_au",
    "DROP TRIGGER IF EXISTS campaigns_turn_fts_ad",
    "DROP TRIGGER IF EXISTS campaigns_turn_fts_ai",
    "DROP TABLE IF EXISTS campaigns_turn_fts",
]


def _create(rowid: str) -> list[str]:
    new, old = rowid.format(row="new"), rowid.format(row="old")
    return [
        "CREATE VIRTUAL TABLE campaigns_turn_fts USING fts5("
        "body, content='', tokenize='porter unicode61')",
        "CREATE TRIGGER campaigns_turn_fts_ai AFTER INSERT ON campaigns_turn BEGIN "
        f"INSERT INTO campaigns_turn_fts(rowid, body) VALUES ({new}, {BODY.format(row='new')});"
        " END",
        "CREATE TRIGGER campaigns_turn_fts_ad AFTER DELETE ON campaigns_turn BEGIN "
        "INSERT INTO campaigns_turn_fts(campaigns_turn_fts, rowid, body) "
        f"VALUES ('delete', {old}, {BODY.format(row='old')}); END",
        "CREATE TRIGGER campaigns_turn_fts_au AFTER UPDATE OF content ON campaigns_turn "
        "BEGIN INSERT INTO campaigns_turn_fts(campaigns_turn_fts, rowid, body) "
        f"VALUES ('delete', {old}, {BODY.format(row='old')}); "
        f"INSERT INTO campaigns_turn_fts(rowid, body) VALUES ({new}, {BODY.format(row='new')});"
        " END",
        "INSERT INTO campaigns_turn_fts(rowid, body) "
        f"SELECT {rowid.format(row='campaigns_turn')}, {BODY.format(row='campaigns_turn')} "
        "FROM campaigns_turn",
    ]


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        for statement in DROP + _create("-{row}.id"):
            schema_editor.execute(statement)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        for statement in DROP + _create("{row}.id"):
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("campaigns", "0009_console_turn_revision")]
    operations = [migrations.RunPython(forward, backward)]
