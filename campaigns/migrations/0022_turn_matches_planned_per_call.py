"""PostgreSQL: the full-text matches of a search are planned with their values, per call.

The pack loader's reads run as prepared statements on generic plans (`BABEL_PG_PREPARE`).
For the search they were a bad bet: blind to the experiment, the rounds and the words,
the planner estimates the experiment's rows in a round range as a handful and walks the
(experiment, round, seq) btree computing ``to_tsvector`` on every turn it passes instead
of asking the GIN index. On a campaign of 1,000 turns that made a pack 40-50 ms instead
of 1-3 ms; on one of 50,000 the same statement chose the GIN index. Which plan a
connection got depended on the table's statistics when it first prepared the statement.

``babel_turn_matches`` answers the one question whose best plan depends on the values —
the newest ``n`` turns of an experiment in ``[round_from, round_to)`` matching a tsquery
— with dynamic SQL, which PostgreSQL plans on every call with the actual values (about
0.1 ms). The rest of the search (the visibility filter, by primary key on at most ``n``
rows) stays in the prepared statement. Turns an import wrote outside the GIN index
(migration 0017) are scanned only while the experiment has a `SearchBacklog` row
(migration 0021); each branch gives its newest ``n`` and the function the newest ``n`` of
both, so the answer is the same before and after the indexing task.
"""

from django.db import migrations

MATCHES_FUNCTION = r"""
CREATE OR REPLACE FUNCTION babel_turn_matches(
    experiment bigint, query text, round_from integer, round_to integer, n integer
) RETURNS TABLE (id bigint, seq integer) AS $$
DECLARE
    matching CONSTANT text := 'SELECT id, seq FROM campaigns_turn WHERE experiment_id = $1 '
        'AND round >= $3 AND round < $4 AND to_tsvector(''english''::regconfig, content) '
        '@@ to_tsquery(''english''::regconfig, $2) AND ';
    newest CONSTANT text := ' ORDER BY seq DESC LIMIT $5';
BEGIN
    IF EXISTS (SELECT 1 FROM campaigns_searchbacklog b WHERE b.experiment_id = experiment) THEN
        RETURN QUERY EXECUTE
            'SELECT m.id, m.seq FROM ((' || matching || 'search_indexed' || newest
            || ') UNION ALL (' || matching || 'NOT search_indexed' || newest || ')) AS m'
            ' ORDER BY m.seq DESC LIMIT $5'
            USING experiment, query, round_from, round_to, n;
    ELSE
        RETURN QUERY EXECUTE matching || 'search_indexed' || newest
            USING experiment, query, round_from, round_to, n;
    END IF;
END $$ LANGUAGE plpgsql STABLE ROWS 100
"""


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(MATCHES_FUNCTION, params=None)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            "DROP FUNCTION IF EXISTS babel_turn_matches(bigint, text, integer, integer, integer)",
            params=None,
        )


class Migration(migrations.Migration):
    dependencies = [("campaigns", "0021_search_backlog")]
    operations = [migrations.RunPython(forward, backward)]
