"""PostgreSQL: the full-text index is keyed by experiment as well as by word.

``turn_content_fts`` (migrations 0003, 0017) indexed the words of every campaign's turns
together, so a search for one campaign's matches of a word read the heap row of every
campaign's match and dropped the others by experiment (or intersected the index with the
experiment's btree, at the cost of that campaign's every turn). With five 50,000-turn
campaigns in one database, a pack's postings took 26.5 ms instead of the 7 ms they take
with one. ``turn_exp_content_fts`` is a GIN index of ``(experiment_id, to_tsvector(…))``
(the ``btree_gin`` extension gives GIN its integer operator class): the index itself
intersects a word's matches with the experiment's, and only the campaign's own matches
reach the heap. The plain index is dropped: every full-text search here is one
experiment's, and the new index also answers a search by word alone.

Where one campaign holds at least half of the table's turns (a single-campaign database,
or the one big campaign among small ones), intersecting a word's matches with the
experiment's entry costs more than it saves: that entry lists most of the table (0.5
instead of 0.15 ms a common word at 50,000 turns), and other campaigns' matches are few.
``babel_turn_postings`` then writes the experiment filter as ``experiment_id + 0 = $1``,
which the index cannot use: the index is searched by the word alone and other campaigns'
matches are dropped at the heap, as before. The same rows either way; only the plan
differs.

``btree_gin`` ships with PostgreSQL (contrib) and is a trusted extension since
PostgreSQL 13: a user who may create objects in the database may install it. Where the
migration's user may not, it stops with the statement a superuser runs first.
"""

from importlib import import_module

from django.db import DatabaseError, migrations, transaction

EXTENSION = "CREATE EXTENSION IF NOT EXISTS btree_gin"
PER_EXPERIMENT = (
    "CREATE INDEX turn_exp_content_fts ON campaigns_turn "
    "USING GIN (experiment_id, to_tsvector('english'::regconfig, content)) "
    "WITH (fastupdate = off) WHERE search_indexed"
)
SHARED = (
    "CREATE INDEX turn_content_fts ON campaigns_turn "
    "USING GIN (to_tsvector('english'::regconfig, content)) WITH (fastupdate = off) "
    "WHERE search_indexed"
)

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
    -- The experiment's turns (its newest seq: one index probe) against the table's (the
    -- planner's estimate, -1 before the first ANALYZE). It picks the plan, never the rows.
    dense CONSTANT boolean := 2 * coalesce((
        SELECT t.seq FROM campaigns_turn t WHERE t.experiment_id = experiment
        ORDER BY t.seq DESC LIMIT 1
    ), 0) >= (SELECT c.reltuples FROM pg_class c WHERE c.oid = 'campaigns_turn'::regclass);
    same_experiment CONSTANT text := CASE
        WHEN dense THEN 'experiment_id + 0 = $1' ELSE 'experiment_id = $1' END;
    newest CONSTANT text := ' ORDER BY seq DESC LIMIT $2';
    branches text[] := '{}';
    matching text;
BEGIN
    FOR i IN 1 .. coalesce(array_length(queries, 1), 0) LOOP
        CONTINUE WHEN queries[i] IS NULL;
        matching := 'SELECT ' || i || ' AS word, id, seq, round, tokens, experiment_id, '
            'held_at, visibility, kind, speaker FROM campaigns_turn WHERE '
            || same_experiment || ' AND to_tsvector(''english''::regconfig, content) @@ '
            'to_tsquery(''english''::regconfig, ' || quote_literal(queries[i]) || ') AND ';
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


def forward(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    try:
        with transaction.atomic(using=schema_editor.connection.alias):
            schema_editor.execute(EXTENSION, params=None)
    except DatabaseError as exc:
        raise RuntimeError(
            "The full-text index needs PostgreSQL's btree_gin extension, and this user "
            f"may not install it ({exc}). Run `{EXTENSION};` in this database as a "
            "superuser, then migrate again."
        ) from exc
    schema_editor.execute(PER_EXPERIMENT, params=None)
    schema_editor.execute("DROP INDEX IF EXISTS turn_content_fts", params=None)
    schema_editor.execute(POSTINGS_FUNCTION, params=None)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        previous = import_module("campaigns.migrations.0034_turn_postings_in_one_call")
        schema_editor.execute(previous.POSTINGS_FUNCTION, params=None)
        schema_editor.execute(SHARED, params=None)
        schema_editor.execute("DROP INDEX IF EXISTS turn_exp_content_fts", params=None)


class Migration(migrations.Migration):
    dependencies = [("campaigns", "0034_turn_postings_in_one_call")]
    operations = [migrations.RunPython(forward, backward)]
