"""PostgreSQL: a search's matches come back as rows, read once from the heap.

``babel_turn_matches`` (migration 0022) returned only the matches' ids; the search's
prepared statement then read every one of them again by primary key to apply the
visibility rule and take its columns. At 50,000 turns a pack's postings read up to 500
matches for each of a dozen words twice: about a quarter of the statement's time.

``babel_turn_match_rows`` answers the same question with the same plan (dynamic SQL,
planned per call with its values; turns an import left outside the GIN index scanned only
while the experiment has a `SearchBacklog` row) and returns the columns of each match
that the postings read and that the selector's turn rule tests
(`search_postgres.MATCH_ROW_COLUMNS` lists them). The statement applies the rule to these
rows as it would to the table's. A search that needs other columns (the turn's text) reads
them by primary key, as before.
"""

from importlib import import_module

from django.db import migrations

MATCH_ROWS_FUNCTION = r"""
CREATE OR REPLACE FUNCTION babel_turn_match_rows(
    experiment bigint, query text, round_from integer, round_to integer, n integer
) RETURNS TABLE (
    id bigint, seq integer, round integer, tokens integer, experiment_id bigint,
    held_at timestamptz, visibility jsonb, kind varchar, speaker varchar
) AS $$
DECLARE
    matching CONSTANT text := 'SELECT id, seq, round, tokens, experiment_id, held_at, '
        'visibility, kind, speaker FROM campaigns_turn WHERE experiment_id = $1 '
        'AND round >= $3 AND round < $4 AND to_tsvector(''english''::regconfig, content) '
        '@@ to_tsquery(''english''::regconfig, $2) AND ';
    newest CONSTANT text := ' ORDER BY seq DESC LIMIT $5';
BEGIN
    IF EXISTS (SELECT 1 FROM campaigns_searchbacklog b WHERE b.experiment_id = experiment) THEN
        RETURN QUERY EXECUTE
            'SELECT m.* FROM ((' || matching || 'search_indexed' || newest
            || ') UNION ALL (' || matching || 'NOT search_indexed' || newest || ')) AS m'
            ' ORDER BY m.seq DESC LIMIT $5'
            USING experiment, query, round_from, round_to, n;
    ELSE
        RETURN QUERY EXECUTE matching || 'search_indexed' || newest
            USING experiment, query, round_from, round_to, n;
    END IF;
END $$ LANGUAGE plpgsql STABLE ROWS 100
"""

DROP_MATCHES = "DROP FUNCTION IF EXISTS babel_turn_matches(bigint, text, integer, integer, integer)"
DROP_MATCH_ROWS = (
    "DROP FUNCTION IF EXISTS babel_turn_match_rows(bigint, text, integer, integer, integer)"
)


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(MATCH_ROWS_FUNCTION, params=None)
        schema_editor.execute(DROP_MATCHES, params=None)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        previous = import_module("campaigns.migrations.0022_turn_matches_planned_per_call")
        schema_editor.execute(previous.MATCHES_FUNCTION, params=None)
        schema_editor.execute(DROP_MATCH_ROWS, params=None)


class Migration(migrations.Migration):
    dependencies = [("campaigns", "0032_turn_experiment_id_span")]
    operations = [migrations.RunPython(forward, backward)]
