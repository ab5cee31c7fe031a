"""Search reads the turns' term rows on both databases: SQLite gets its own (in place of
the FTS5 index), and PostgreSQL's full-text index goes.

PostgreSQL's term rows (migration 0037) now serve every search; while an import's turns
wait for them, a search also scans those turns through their partial index (migration
0017, `search_postgres.backlog_postings`). The GIN index and `babel_turn_postings`
(migrations 0034, 0035) had no other reader: they go, and a turn's write no longer
updates a GIN index. (Migration 0035 still installs ``btree_gin``; nothing uses it.)

SQLite: ranked retrieval reads, for each query word, its newest readable matches. Through FTS5
that was a walk of the word's doclist, then a look-up of every match in the turns table
for its seq, tokens and the columns the visibility rule reads (~1,300 matches, 3.6 ms at
50,000 turns). ``campaigns_turn_terms`` holds one row per (turn, term) with those columns,
clustered by ``(experiment_id, term, seq)`` (``WITHOUT ROWID``): a word's newest matches
are a backward walk of one key range, the selector's turn rule applied to each row as to
the table's, stopped at the word's 200th readable one (as PostgreSQL's, migration 0037).

The terms are `context_engine.ranking.terms` — the same stems the Arena's in-memory
replay ranks by — given to SQL by ``babel_terms(content)`` (a JSON array of a text's
distinct terms), which every connection registers (`campaigns.models.search_terms`). A
change to `ranking.terms` must come with a migration that rebuilds the rows.

Triggers keep the rows exact in the statement that writes the turn: an insert adds its
rows, an update of the content or of a copied column rewrites them, a delete removes
them. An import drops the insert trigger while it writes (one multi-row INSERT per chunk,
as it did for FTS5) and leaves its turns to `index_imported_turns` after commit, with a
`SearchBacklog` row meanwhile (searches then scan the experiment's turns).

The FTS5 table and its triggers go: nothing else read them. So does the turns' index by
experiment and id (migration 0032, both databases), which bounded FTS5's walks.
"""

from importlib import import_module

from django.db import migrations

TABLE = """
CREATE TABLE campaigns_turn_terms (
    experiment_id integer NOT NULL,
    term text NOT NULL,
    seq integer NOT NULL,
    id integer NOT NULL,
    round integer NOT NULL,
    tokens integer NOT NULL,
    held_at datetime NULL,
    visibility text NULL,
    kind varchar(16) NOT NULL,
    speaker varchar(64) NOT NULL,
    PRIMARY KEY (experiment_id, term, seq)
) WITHOUT ROWID
"""
# One turn's rows (``{row}``: NEW, OLD or a table alias).
ROWS_OF = (
    "SELECT {row}.experiment_id, terms.value, {row}.seq, {row}.id, {row}.round, "
    "{row}.tokens, {row}.held_at, {row}.visibility, {row}.kind, {row}.speaker "
    "FROM json_each(babel_terms({row}.content)) AS terms"
)
INSERT_ROWS = "INSERT INTO campaigns_turn_terms " + ROWS_OF
DELETE_ROWS = (
    "DELETE FROM campaigns_turn_terms WHERE experiment_id = OLD.experiment_id "
    "AND seq = OLD.seq AND term IN (SELECT value FROM json_each(babel_terms(OLD.content)))"
)
# The columns whose change rewrites a turn's rows.
COPIED = (
    "content",
    "experiment_id",
    "seq",
    "round",
    "tokens",
    "held_at",
    "visibility",
    "kind",
    "speaker",
)
CHANGED = " OR ".join(f"OLD.{column} IS NOT NEW.{column}" for column in COPIED)
INSERT_TRIGGER = (
    "CREATE TRIGGER turn_terms_insert AFTER INSERT ON campaigns_turn BEGIN "
    f"{INSERT_ROWS.format(row='NEW')}; END"
)
TRIGGERS = (
    INSERT_TRIGGER,
    f"CREATE TRIGGER turn_terms_update AFTER UPDATE ON campaigns_turn WHEN {CHANGED} BEGIN "
    f"{DELETE_ROWS}; {INSERT_ROWS.format(row='NEW')}; END",
    f"CREATE TRIGGER turn_terms_delete AFTER DELETE ON campaigns_turn BEGIN {DELETE_ROWS}; END",
)
BACKFILL = (
    "INSERT INTO campaigns_turn_terms "
    + ROWS_OF.format(row="t").replace("FROM json_each", "FROM campaigns_turn AS t, json_each")
    + " ORDER BY 1, 2, 3"
)
DROP_FTS = (
    "DROP TRIGGER IF EXISTS campaigns_turn_fts_au",
    "DROP TRIGGER IF EXISTS campaigns_turn_fts_ad",
    "DROP TRIGGER IF EXISTS campaigns_turn_fts_ai",
    "DROP TABLE IF EXISTS campaigns_turn_fts",
)


PG_FORWARD = (
    "DROP FUNCTION IF EXISTS babel_turn_postings(bigint, text[], integer)",
    "DROP INDEX IF EXISTS turn_exp_content_fts",
)


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in PG_FORWARD:
            schema_editor.execute(statement, params=None)
    if schema_editor.connection.vendor != "sqlite":
        return
    for statement in (TABLE, BACKFILL, *TRIGGERS, *DROP_FTS):
        schema_editor.execute(statement, params=None)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        gin = import_module("campaigns.migrations.0035_turn_search_index_per_experiment")
        schema_editor.execute(gin.PER_EXPERIMENT, params=None)
        schema_editor.execute(gin.POSTINGS_FUNCTION, params=None)
    if schema_editor.connection.vendor != "sqlite":
        return
    for name in ("insert", "update", "delete"):
        schema_editor.execute(f"DROP TRIGGER IF EXISTS turn_terms_{name}", params=None)
    schema_editor.execute("DROP TABLE IF EXISTS campaigns_turn_terms", params=None)
    fts = import_module("campaigns.migrations.0019_turn_fts_no_column_sizes")
    for statement in fts.DROP + fts._create(", columnsize=0"):
        schema_editor.execute(statement, params=None)


class Migration(migrations.Migration):
    dependencies = [("campaigns", "0037_turn_terms")]
    operations = [
        migrations.RunPython(forward, backward),
        migrations.RemoveIndex(model_name="turn", name="turn_exp_id"),
    ]
