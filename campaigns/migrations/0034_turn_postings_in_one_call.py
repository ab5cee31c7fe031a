"""PostgreSQL: a pack's postings come from one function call, one planned statement.

Ranked retrieval asked ``babel_turn_match_rows`` (migration 0033) once per query word: a
dozen function calls, each planning and running its own dynamic statement. At 1,000
turns that overhead was almost the whole postings statement (about 7 ms for 27 rows),
and it did not shrink with the history.

``babel_turn_postings(experiment, queries, n)`` answers the same question for every word
at once: for each non-null ``queries[i]`` (one word, as `to_tsquery` takes it), the
experiment's newest ``n`` matches, tagged ``word = i``, with the columns the postings
read and the selector's turn rule tests (those of ``babel_turn_match_rows``). It builds
one statement, a UNION ALL of a branch per word, and runs it once: planned on every call
with its values (each word's branch picks the GIN index or the experiment's btree for
that word), as the per-word function did. While the experiment has a `SearchBacklog` row
each branch also reads the turns an import left outside the GIN index. Visibility is
not decided here: the caller's statement applies the selector's rule to these rows.
"""

from django.db import migrations

POSTINGS_FUNCTION = r"""
CREATE OR REPLACE FUNCTION babel_turn_postings(
    experiment bigint, queries text[], n integer
) RETURNS TABLE (
    word integer, id bigint, seq integer, round integer, tokens integer,
    experiment_id bigint, held_at timestamptz, visibility jsonb, kind varchar,
    speaker varchar
) AS $$
DECLARE
    backlog CONSTANT boolean := EXISTS (
        SELECT 1 FROM campaigns_searchbacklog b WHERE b.experiment_id = experiment
    );
    newest CONSTANT text := ' ORDER BY seq DESC LIMIT $2';
    branches text[] := '{}';
    matching text;
BEGIN
    FOR i IN 1 .. coalesce(array_length(queries, 1), 0) LOOP
        CONTINUE WHEN queries[i] IS NULL;
        matching := 'SELECT ' || i || ' AS word, id, seq, round, tokens, experiment_id, '
            'held_at, visibility, kind, speaker FROM campaigns_turn WHERE experiment_id = $1 '
            'AND to_tsvector(''english''::regconfig, content) @@ to_tsquery('
            '''english''::regconfig, ' || quote_literal(queries[i]) || ') AND ';
        IF backlog THEN
            branches := branches || (
                '(SELECT m.* FROM ((' || matching || 'search_indexed' || newest
                || ') UNION ALL (' || matching || 'NOT search_indexed' || newest
                || ')) AS m ORDER BY m.seq DESC LIMIT $2)'
            );
        ELSE
            branches := branches || ('(' || matching || 'search_indexed' || newest || ')');
        END IF;
    END LOOP;
    IF cardinality(branches) > 0 THEN
        RETURN QUERY EXECUTE array_to_string(branches, ' UNION ALL ') USING experiment, n;
    END IF;
END $$ LANGUAGE plpgsql STABLE ROWS 1000
"""

DROP_POSTINGS = "DROP FUNCTION IF EXISTS babel_turn_postings(bigint, text[], integer)"


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTINGS_FUNCTION, params=None)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP_POSTINGS, params=None)


class Migration(migrations.Migration):
    dependencies = [("campaigns", "0033_turn_match_rows")]
    operations = [migrations.RunPython(forward, backward)]
