"""PostgreSQL: each turn's words, kept per campaign and word in seq order.

A GIN index answers "which turns contain this word" as an unordered set: a pack's
postings read the heap row of *every* match of each query word (about 2,100 rows for a
dozen words at 50,000 turns, 7 ms) to keep the newest 200 readable ones. A word's
newest matches are what ranked retrieval reads, so ``campaigns_turn_terms`` holds one row
per (turn, lexeme) — the lexemes are PostgreSQL's own, ``to_tsvector('english', content)``,
so a word matches exactly the turns it matched through the GIN index — with the columns
a posting carries and the selector's turn rule tests (`search_postgres.MATCH_ROW_COLUMNS`,
the turn's id as ``id``). Its index ``(experiment_id, term, seq)`` gives a word's matches
newest first and includes every other column, so the read is index-only; the postings
statement applies the rule to these rows as it would to the table's, and stops at the
200th readable one (at 50,000 turns 1.9 instead of 6.5 ms for a pack's twelve words). The
cost is space: about 13 rows a turn, for 51,000 turns a 64 MB table and a 60 MB index
beside the turns' 12 MB.

Triggers keep it exact, in the same statement as the write: an insert adds the rows of
its indexed turns (an import's rows, written with ``search_indexed`` false, are added
when the indexing task flips the flag), an update of any copied column or of the
content rewrites the turn's rows, a delete removes them, and a truncate empties the
table. Statement-level, with transition tables: an import's or a deletion's rows are
handled in one statement, not one call per row. The table is not a model: nothing but
these triggers writes it and nothing but the postings statement reads it.
"""

from django.db import migrations

TABLE = """
CREATE TABLE campaigns_turn_terms (
    experiment_id bigint NOT NULL,
    term text NOT NULL,
    seq integer NOT NULL,
    id bigint NOT NULL,
    round integer NOT NULL,
    tokens integer NOT NULL,
    held_at timestamptz NULL,
    visibility jsonb NULL,
    kind varchar(16) NOT NULL,
    speaker varchar(64) NOT NULL
)
"""
# Every turn's terms, from the same expression the GIN index holds.
TERMS_OF = (
    "SELECT t.experiment_id, lexeme, t.seq, t.id, t.round, t.tokens, t.held_at, "
    "t.visibility, t.kind, t.speaker FROM {rows} AS t CROSS JOIN "
    "unnest(tsvector_to_array(to_tsvector('english'::regconfig, t.content))) AS lexeme "
    "WHERE t.search_indexed"
)
BACKFILL = "INSERT INTO campaigns_turn_terms " + TERMS_OF.format(rows="campaigns_turn")
INDEXES = (
    "CREATE INDEX turn_terms_newest ON campaigns_turn_terms (experiment_id, term, seq) "
    "INCLUDE (id, round, tokens, held_at, visibility, kind, speaker)",
    "CREATE INDEX turn_terms_turn ON campaigns_turn_terms (id)",
)
# The columns whose change rewrites a turn's rows.
COPIED = (
    "content",
    "search_indexed",
    "experiment_id",
    "seq",
    "round",
    "tokens",
    "held_at",
    "visibility",
    "kind",
    "speaker",
)
CHANGED = " OR ".join(f"o.{column} IS DISTINCT FROM n.{column}" for column in COPIED)
# An update rewrites the rows of the turns whose copied columns changed: the DELETE and
# the INSERT share one snapshot, so the DELETE removes only the rows that were there.
SYNC_FUNCTION = f"""
CREATE OR REPLACE FUNCTION babel_turn_terms_sync() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO campaigns_turn_terms {TERMS_OF.format(rows="new_rows")};
    ELSIF TG_OP = 'DELETE' THEN
        DELETE FROM campaigns_turn_terms WHERE id IN (SELECT id FROM old_rows);
    ELSE
        WITH changed AS MATERIALIZED (
            SELECT n.id FROM new_rows AS n JOIN old_rows AS o USING (id) WHERE {CHANGED}
        ), gone AS (
            DELETE FROM campaigns_turn_terms WHERE id IN (SELECT id FROM changed)
        )
        INSERT INTO campaigns_turn_terms {TERMS_OF.format(rows="new_rows")}
            AND t.id IN (SELECT id FROM changed);
    END IF;
    RETURN NULL;
END $$ LANGUAGE plpgsql
"""
TRUNCATE_FUNCTION = """
CREATE OR REPLACE FUNCTION babel_turn_terms_truncate() RETURNS trigger AS $$
BEGIN
    TRUNCATE campaigns_turn_terms;
    RETURN NULL;
END $$ LANGUAGE plpgsql
"""
TRIGGERS = (
    "CREATE TRIGGER turn_terms_insert AFTER INSERT ON campaigns_turn "
    "REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT "
    "EXECUTE FUNCTION babel_turn_terms_sync()",
    "CREATE TRIGGER turn_terms_update AFTER UPDATE ON campaigns_turn "
    "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT "
    "EXECUTE FUNCTION babel_turn_terms_sync()",
    "CREATE TRIGGER turn_terms_delete AFTER DELETE ON campaigns_turn "
    "REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT "
    "EXECUTE FUNCTION babel_turn_terms_sync()",
    "CREATE TRIGGER turn_terms_truncate AFTER TRUNCATE ON campaigns_turn "
    "FOR EACH STATEMENT EXECUTE FUNCTION babel_turn_terms_truncate()",
)
PG_FORWARD = [
    TABLE,
    BACKFILL,
    *INDEXES,
    SYNC_FUNCTION,
    TRUNCATE_FUNCTION,
    *TRIGGERS,
    "ANALYZE campaigns_turn_terms",
]
PG_BACKWARD = [
    "DROP TRIGGER IF EXISTS turn_terms_truncate ON campaigns_turn",
    "DROP TRIGGER IF EXISTS turn_terms_delete ON campaigns_turn",
    "DROP TRIGGER IF EXISTS turn_terms_update ON campaigns_turn",
    "DROP TRIGGER IF EXISTS turn_terms_insert ON campaigns_turn",
    "DROP FUNCTION IF EXISTS babel_turn_terms_truncate()",
    "DROP FUNCTION IF EXISTS babel_turn_terms_sync()",
    "DROP TABLE IF EXISTS campaigns_turn_terms",
]


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in PG_FORWARD:
            schema_editor.execute(statement, params=None)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in PG_BACKWARD:
            schema_editor.execute(statement, params=None)


class Migration(migrations.Migration):
    dependencies = [("campaigns", "0036_drop_turn_match_rows")]
    operations = [migrations.RunPython(forward, backward)]
