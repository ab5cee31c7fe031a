"""SQLite: the full-text table keeps no per-row column sizes (FTS5 ``columnsize=0``).

Those sizes only feed FTS5's own ranking functions (bm25), which nothing here uses:
searches return the newest matches by rowid (`campaigns.reads.packs`). Without them
every turn's full-text write is one shadow-table row fewer: about a fifth of the
full-text cost of an import. The table is rebuilt as in migration 0010 (rowid = -id,
contentless, porter stemming) and refilled from the turns. PostgreSQL: nothing changes.
"""

from django.db import migrations

BODY = "'xexp' || {row}.experiment_id || ' ' || {row}.content"
ROWID = "-{row}.id"
DROP = [
    "DROP TRIGGER IF EXISTS campaigns_turn_fts_au",
    "DROP TRIGGER IF EXISTS campaigns_turn_fts_ad",
    "DROP TRIGGER IF EXISTS campaigns_turn_fts_ai",
    "DROP TABLE IF EXISTS campaigns_turn_fts",
]


def _create(options: str) -> list[str]:
    new, old = ROWID.format(row="new"), ROWID.format(row="old")
    return [
        "CREATE VIRTUAL TABLE campaigns_turn_fts USING fts5("
        f"body, content='', tokenize='porter unicode61'{options})",
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
        # Ascending FTS rowid (descending id): FTS5 appends instead of flushing per row.
        "INSERT INTO campaigns_turn_fts(rowid, body) "
        f"SELECT {ROWID.format(row='campaigns_turn')}, {BODY.format(row='campaigns_turn')} "
        "FROM campaigns_turn ORDER BY id DESC",
    ]


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        for statement in DROP + _create(", columnsize=0"):
            schema_editor.execute(statement)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        for statement in DROP + _create(""):
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("campaigns", "0018_turn_index_writes")]
    operations = [migrations.RunPython(forward, backward)]
