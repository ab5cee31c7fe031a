"""Full-text search over turn content, in each database's own engine (SPEC §5.8).

PostgreSQL: a GIN index on to_tsvector('english', content), matched by
`campaigns.reads.search.search_turns`. SQLite: an external-content FTS5 table kept in sync
by triggers. Other vendors: nothing (search falls back to no candidates).
"""

from django.db import migrations

# fastupdate off: turns arrive one at a time, and a pending list would be scanned
# linearly by every search until the next vacuum.
PG_FORWARD = (
    "CREATE INDEX IF NOT EXISTS turn_content_fts ON campaigns_turn "
    "USING GIN (to_tsvector('english'::regconfig, content)) WITH (fastupdate = off)"
)
PG_BACKWARD = "DROP INDEX IF EXISTS turn_content_fts"

# Contentless FTS5: each row indexes "xexp<experiment id> <content>", so a search is an
# intersection with the experiment's token (fast), not a scan of every campaign's matches.
SQLITE_BODY = "'xexp' || {row}.experiment_id || ' ' || {row}.content"
SQLITE_FORWARD = [
    "CREATE VIRTUAL TABLE IF NOT EXISTS campaigns_turn_fts USING fts5("
    "body, content='', tokenize='porter unicode61')",
    "CREATE TRIGGER IF NOT EXISTS campaigns_turn_fts_ai AFTER INSERT ON campaigns_turn BEGIN "
    f"INSERT INTO campaigns_turn_fts(rowid, body) VALUES (new.id, {SQLITE_BODY.format(row='new')});"
    " END",
    "CREATE TRIGGER IF NOT EXISTS campaigns_turn_fts_ad AFTER DELETE ON campaigns_turn BEGIN "
    "INSERT INTO campaigns_turn_fts(campaigns_turn_fts, rowid, body) "
    f"VALUES ('delete', old.id, {SQLITE_BODY.format(row='old')}); END",
    "CREATE TRIGGER IF NOT EXISTS campaigns_turn_fts_au AFTER UPDATE OF content ON campaigns_turn "
    "BEGIN INSERT INTO campaigns_turn_fts(campaigns_turn_fts, rowid, body) "
    f"VALUES ('delete', old.id, {SQLITE_BODY.format(row='old')}); "
    f"INSERT INTO campaigns_turn_fts(rowid, body) VALUES (new.id, {SQLITE_BODY.format(row='new')});"
    " END",
    "INSERT INTO campaigns_turn_fts(rowid, body) "
    f"SELECT id, {SQLITE_BODY.format(row='campaigns_turn')} FROM campaigns_turn",
]
SQLITE_BACKWARD = [
    "DROP TRIGGER IF EXISTS campaigns_turn_fts_au",
    "DROP TRIGGER IF EXISTS campaigns_turn_fts_ad",
    "DROP TRIGGER IF EXISTS campaigns_turn_fts_ai",
    "DROP TABLE IF EXISTS campaigns_turn_fts",
]


def forward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(PG_FORWARD)
    elif vendor == "sqlite":
        for statement in SQLITE_FORWARD:
            schema_editor.execute(statement)


def backward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(PG_BACKWARD)
    elif vendor == "sqlite":
        for statement in SQLITE_BACKWARD:
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("campaigns", "0002_jobs")]
    operations = [migrations.RunPython(forward, backward)]
