"""A log of the turns' changes that are not appends, for the pack's postings cache.

A pack's postings (each query word's newest readable matches, `campaigns.reads.search`)
grow with the history: at 50,000 turns about 1,300 rows a pack, ~2 ms of reading. Between
two packs the history mostly grows by appended turns, which take the experiment's next
seq, so a process can keep each word's postings (`campaigns.reads.postings_cache`) and
read only the matches past the newest seq it has seen. Anything else — an edit, a
delete, a visibility or hold change, an insert below the experiment's newest seq — can
change a word's older matches, and must make the cache read them again.

``campaigns_turn_changes`` records those writes: one row per turn version that stopped or
started being what the term rows hold (an update's old and new versions, a delete's old
one, a low insert's new one), with the columns the selector's turn rule reads. A viewer's
stamp is the number of these rows *it may read* (the rule applied to them as to the
turns, `packs.turn_change_count_query`): a change to a turn the viewer can read neither
before nor after cannot change its postings, and does not change its stamp — a hidden
write costs the viewer's next pack nothing, so its timing tells nothing (the lesson of
`pack_cache`, issue 23). An append logs nothing.

Kept by the same triggers as the term rows (PostgreSQL: the statement-level
``babel_turn_terms_sync``, migration 0037; SQLite: the row-level ``turn_terms_*``,
migration 0038), in the statement that writes the turn. The rows of a deleted experiment
go with it (a trigger on the experiment; Django deletes the turns first). Not a model:
only these triggers write it and only the stamp reads it. On SQLite a migration that
rebuilds ``campaigns_turn`` or ``campaigns_experiment`` must re-create these triggers,
as `_sqlite_triggers` does for the pack-version ones.
"""

from importlib import import_module

from django.db import migrations

PG_TERMS = import_module("campaigns.migrations.0037_turn_terms")
SQLITE_TERMS = import_module("campaigns.migrations.0038_search_from_term_rows")

# The turn's columns a change row keeps: the selector's turn rule reads these.
LOGGED = ("experiment_id", "id", "seq", "held_at", "visibility", "kind", "speaker")

PG_TABLE = """
CREATE TABLE campaigns_turn_changes (
    experiment_id bigint NOT NULL,
    id bigint NOT NULL,
    seq integer NOT NULL,
    held_at timestamptz NULL,
    visibility jsonb NULL,
    kind varchar(16) NOT NULL,
    speaker varchar(64) NOT NULL
)
"""
SQLITE_TABLE = """
CREATE TABLE campaigns_turn_changes (
    experiment_id integer NOT NULL,
    id integer NOT NULL,
    seq integer NOT NULL,
    held_at datetime NULL,
    visibility text NULL,
    kind varchar(16) NOT NULL,
    speaker varchar(64) NOT NULL
)
"""
INDEX = "CREATE INDEX turn_changes_experiment ON campaigns_turn_changes (experiment_id)"


def _log(rows: str, where: str = "", *, table: bool = True) -> str:
    """Log ``rows``' turn versions: a transition table's (PostgreSQL), or with ``table``
    false a row trigger's ``NEW``/``OLD`` (SQLite), which is no table to select from."""
    listed = ", ".join(f"{rows}.{column}" for column in LOGGED)
    source = f"FROM {rows} AS {rows} " if table else ""
    return f"INSERT INTO campaigns_turn_changes SELECT {listed} {source}{where}"


# PostgreSQL: 0037's function, each branch also logging. An insert logs nothing when,
# for each experiment, its rows are a run of consecutive seqs ending at the experiment's
# newest (an append, or an import's chunk): seqs are unique per experiment, so no
# earlier turn has a seq above one of them. One index look-up per experiment, no walk.
PG_LOW_INSERT = (
    "WHERE new_rows.experiment_id IN (SELECT f.experiment_id FROM (SELECT experiment_id, "
    "min(seq) AS low, max(seq) AS high, count(*) AS n FROM new_rows GROUP BY experiment_id) "
    "AS f WHERE f.n <> f.high - f.low + 1 OR f.high <> (SELECT max(t.seq) FROM "
    "campaigns_turn AS t WHERE t.experiment_id = f.experiment_id))"
)
# An update logs the changed turns that had term rows: the indexing task's flip of an
# import's turns (``search_indexed``, while its `SearchBacklog` row stops the cache from
# storing anything) changed nothing the cache could hold.
PG_WAS_INDEXED = (
    "WHERE {rows}.id IN (SELECT c.id FROM changed AS c JOIN old_rows AS o USING (id) "
    "WHERE o.search_indexed)"
)
PG_SYNC_FUNCTION = f"""
CREATE OR REPLACE FUNCTION babel_turn_terms_sync() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO campaigns_turn_terms {PG_TERMS.TERMS_OF.format(rows="new_rows")};
        {_log("new_rows", PG_LOW_INSERT)};
    ELSIF TG_OP = 'DELETE' THEN
        DELETE FROM campaigns_turn_terms WHERE id IN (SELECT id FROM old_rows);
        {_log("old_rows")};
    ELSE
        WITH changed AS MATERIALIZED (
            SELECT n.id FROM new_rows AS n JOIN old_rows AS o USING (id)
            WHERE {PG_TERMS.CHANGED}
        ), gone AS (
            DELETE FROM campaigns_turn_terms WHERE id IN (SELECT id FROM changed)
        ), logged_old AS (
            {_log("old_rows", PG_WAS_INDEXED.format(rows="old_rows"))}
        ), logged_new AS (
            {_log("new_rows", PG_WAS_INDEXED.format(rows="new_rows"))}
        )
        INSERT INTO campaigns_turn_terms {PG_TERMS.TERMS_OF.format(rows="new_rows")}
            AND t.id IN (SELECT id FROM changed);
    END IF;
    RETURN NULL;
END $$ LANGUAGE plpgsql
"""
PG_TRUNCATE_FUNCTION = """
CREATE OR REPLACE FUNCTION babel_turn_terms_truncate() RETURNS trigger AS $$
BEGIN
    TRUNCATE campaigns_turn_terms;
    TRUNCATE campaigns_turn_changes;
    RETURN NULL;
END $$ LANGUAGE plpgsql
"""
PG_EXPERIMENT_GONE = """
CREATE OR REPLACE FUNCTION babel_turn_changes_gone() RETURNS trigger AS $$
BEGIN
    DELETE FROM campaigns_turn_changes WHERE experiment_id IN (SELECT id FROM old_rows);
    RETURN NULL;
END $$ LANGUAGE plpgsql
"""
PG_EXPERIMENT_TRIGGER = (
    "CREATE TRIGGER turn_changes_experiment_delete AFTER DELETE ON campaigns_experiment "
    "REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT "
    "EXECUTE FUNCTION babel_turn_changes_gone()"
)
PG_FORWARD = (
    PG_TABLE,
    INDEX,
    PG_SYNC_FUNCTION,
    PG_TRUNCATE_FUNCTION,
    PG_EXPERIMENT_GONE,
    PG_EXPERIMENT_TRIGGER,
)
PG_BACKWARD = (
    "DROP TRIGGER IF EXISTS turn_changes_experiment_delete ON campaigns_experiment",
    "DROP FUNCTION IF EXISTS babel_turn_changes_gone()",
    PG_TERMS.SYNC_FUNCTION,
    PG_TERMS.TRUNCATE_FUNCTION,
    "DROP TABLE IF EXISTS campaigns_turn_changes",
)


SQLITE_LOW_INSERT = (
    "WHERE EXISTS (SELECT 1 FROM campaigns_turn WHERE experiment_id = NEW.experiment_id "
    "AND seq > NEW.seq)"
)
INSERT_TRIGGER = (
    "CREATE TRIGGER turn_terms_insert AFTER INSERT ON campaigns_turn BEGIN "
    f"{SQLITE_TERMS.INSERT_ROWS.format(row='NEW')}; "
    f"{_log('NEW', SQLITE_LOW_INSERT, table=False)}; END"
)
SQLITE_TRIGGERS = (
    INSERT_TRIGGER,
    "CREATE TRIGGER turn_terms_update AFTER UPDATE ON campaigns_turn "
    f"WHEN {SQLITE_TERMS.CHANGED} BEGIN {SQLITE_TERMS.DELETE_ROWS}; "
    f"{SQLITE_TERMS.INSERT_ROWS.format(row='NEW')}; "
    f"{_log('OLD', table=False)}; {_log('NEW', table=False)}; END",
    "CREATE TRIGGER turn_terms_delete AFTER DELETE ON campaigns_turn BEGIN "
    f"{SQLITE_TERMS.DELETE_ROWS}; {_log('OLD', table=False)}; END",
    "CREATE TRIGGER turn_changes_experiment_delete AFTER DELETE ON campaigns_experiment "
    "BEGIN DELETE FROM campaigns_turn_changes WHERE experiment_id = OLD.id; END",
)
SQLITE_TRIGGER_NAMES = (
    "turn_terms_insert",
    "turn_terms_update",
    "turn_terms_delete",
    "turn_changes_experiment_delete",
)


def forward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        for statement in PG_FORWARD:
            schema_editor.execute(statement, params=None)
    elif vendor == "sqlite":
        for statement in (SQLITE_TABLE, INDEX):
            schema_editor.execute(statement, params=None)
        for name, statement in zip(SQLITE_TRIGGER_NAMES, SQLITE_TRIGGERS, strict=True):
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {name}", params=None)
            schema_editor.execute(statement, params=None)


def backward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        for statement in PG_BACKWARD:
            schema_editor.execute(statement, params=None)
    elif vendor == "sqlite":
        for name in SQLITE_TRIGGER_NAMES:
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {name}", params=None)
        for statement in SQLITE_TERMS.TRIGGERS:
            schema_editor.execute(statement, params=None)
        schema_editor.execute("DROP TABLE IF EXISTS campaigns_turn_changes", params=None)


class Migration(migrations.Migration):
    dependencies = [("campaigns", "0038_search_from_term_rows")]
    operations = [migrations.RunPython(forward, backward)]
