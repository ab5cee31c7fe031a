"""On PostgreSQL the pack loader's batched reads are prepared and run on generic plans
(`precompiled.run_all`, `BABEL_PG_PREPARE`): planned once per connection, and — what a
generic plan could get wrong — never by reading a whole campaign's turns."""

from __future__ import annotations

import pytest
from django.db import connection

from campaigns import bench
from campaigns.models import Experiment
from campaigns.reads import precompiled, search, selectors, window_cache
from campaigns.services import context_ahead, transcripts
from campaigns.services.context import pack_for_role
from context_engine.types import STRATEGIES
from tests.plans import pg_generic_plan, pg_nested_plans
from tests.services import database_is_postgres, unavailable

pytestmark = pytest.mark.django_db

INPUT = "Where did we leave the brinewick oil and the ashfern tonic?"
TURNS = 4000  # enough for the planner to prefer a sequential scan over an unbounded range


@pytest.fixture
def campaign():
    if not database_is_postgres():
        unavailable("prepared statements and generic plans are PostgreSQL's")
    experiment = bench.create_campaign(TURNS)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE campaigns_turn")
    return experiment


def _pack_statements() -> dict[str, tuple[int, int]]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements "
            "WHERE statement LIKE 'SELECT (SELECT coalesce(json_agg(%%'"
        )
        return {row[0]: (row[1], row[2]) for row in cursor.fetchall()}


def test_pack_reads_are_prepared_once_and_never_planned_again(campaign):
    context_ahead.clear_ahead()
    before = _pack_statements()
    for _ in range(5):
        pack_for_role(experiment=campaign, role="Thorin", input_text=INPUT, use_cache=False)
    after = _pack_statements()
    ran = {sql: plans for sql, plans in after.items() if plans != before.get(sql)}
    # The first pack's two round trips, then one a pack: round trip 2 sent with round
    # trip 1 (`context_ahead.ahead`). Each prepared once and run on its generic plan.
    runs = {
        sql: (generic - before.get(sql, (0, 0))[0], custom)
        for sql, (generic, custom) in ran.items()
    }
    assert sorted(generic for generic, _ in runs.values()) == [1, 1, 4]
    assert all(custom == 0 for _, custom in runs.values())


@pytest.mark.parametrize("strategy", [s for s in STRATEGIES if s != "full_history"])
@pytest.mark.parametrize("role", ["DM", "Thorin"])
def test_no_generic_plan_of_a_pack_reads_every_turn(campaign, monkeypatch, strategy, role):
    """``full_history`` reads the whole history by definition; every other strategy reads a
    window, and its generic plan must walk an index to it (an open ``round >= $1`` is
    planned as a third of the table: a sequential scan)."""
    Experiment.objects.filter(pk=campaign.pk).update(config={"strategy": strategy})
    statements = _recorded_statements(monkeypatch)
    pack_for_role(experiment=campaign.pk, role=role, input_text=INPUT, use_cache=False)

    assert statements
    for sql, params in statements:
        plan = _generic_plan(sql, params)
        assert "Seq Scan on campaigns_turn" not in plan, plan


def test_the_read_of_turns_appended_since_a_kept_window_walks_an_index(campaign, monkeypatch):
    """With a kept window (`window_cache`) round trip 2 reads only the readable turns past
    its newest seq: that generic plan, too, walks the (experiment, seq) index."""
    from types import SimpleNamespace

    # The test's transaction stands in for committed rows: let the cache keep the window.
    monkeypatch.setattr(window_cache, "connection", SimpleNamespace(in_atomic_block=False))
    window_cache.clear()
    try:
        pack_for_role(experiment=campaign.pk, role="Thorin", input_text=INPUT, use_cache=False)
        statements = _recorded_statements(monkeypatch)
        pack_for_role(experiment=campaign.pk, role="Thorin", input_text=INPUT, use_cache=False)
        assert window_cache.stats["kept"] == 1
    finally:
        window_cache.clear()
    assert any('"campaigns_turn"."seq" BETWEEN' in sql for sql, _ in statements)
    for sql, params in statements:
        plan = _generic_plan(sql, params)
        assert "Seq Scan on campaigns_turn" not in plan, plan


def _recorded_statements(monkeypatch) -> list[tuple[str, list]]:
    """Filled with each prepared pack read's ``(sql, params)`` as it runs: the batched
    reads and ranked retrieval's own (postings, hits, neighbours)."""
    statements: list[tuple[str, list]] = []
    for name in ("_fetch_one", "_fetch_all"):
        real_fetch = getattr(precompiled, name)

        def recording(sql, params, real_fetch=real_fetch):
            statements.append((sql, params))
            return real_fetch(sql, params)

        monkeypatch.setattr(precompiled, name, recording)
    return statements


def test_ranked_retrievals_reads_are_prepared_once_too(campaign):
    """Planning the postings statement cost more than running it; it and the hits' reads
    run on generic plans like the batched reads. The postings are one statement whatever
    the number of query words (`search_postgres.postings`)."""

    def retrieval_statements():
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements "
                'WHERE statement LIKE \'SELECT "w"."i" - 1 AS "word"%%\''
            )
            return {row[0]: (row[1], row[2]) for row in cursor.fetchall()}

    before = retrieval_statements()
    for _ in range(4):
        pack_for_role(experiment=campaign, role="Thorin", input_text=INPUT, use_cache=False)
    ran = {sql: plans for sql, plans in retrieval_statements().items() if plans != before.get(sql)}
    assert len(ran) == 1  # the postings of the input's words
    for generic, custom in ran.values():
        assert custom == 0
        assert generic >= 4


def _generic_plan(sql: str, params: list) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW plan_cache_mode")  # the connection's own setting
        assert cursor.fetchone()[0] == "force_generic_plan"
    return pg_generic_plan(sql, params)


def test_without_prepared_statements_the_same_pack_is_read_unprepared(campaign, monkeypatch):
    """`BABEL_PG_PREPARE=false` (for poolers that cannot keep prepared statements) leaves
    psycopg's threshold unset: the reads run as plain statements and give the same pack."""
    prepared = pack_for_role(experiment=campaign, role="Cassia", input_text=INPUT, use_cache=False)
    before = _pack_statements()
    monkeypatch.setattr(connection.connection, "prepare_threshold", None)
    plain = pack_for_role(experiment=campaign, role="Cassia", input_text=INPUT, use_cache=False)
    assert _pack_statements() == before
    assert plain == prepared


@pytest.mark.parametrize("turns", [1000, TURNS])
@pytest.mark.parametrize("role", ["DM", "Thorin"])
def test_a_packs_search_looks_its_words_up_in_the_index(monkeypatch, turns, role):
    """Prepared blind to the values, the search once walked a small campaign's turns and
    computed ``to_tsvector`` on each (40-50 ms a pack at 1,000 turns). A pack's postings
    read each word's term rows from their index (migration 0037). No generic plan reads
    every turn (with a small table it once had, a plan it would keep as the table grew)."""
    if not database_is_postgres():
        unavailable("prepared statements and generic plans are PostgreSQL's")
    experiment = bench.create_campaign(turns)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE campaigns_turn")  # as autovacuum would have by now
        cursor.execute("ANALYZE campaigns_turn_terms")
    statements = _recorded_statements(monkeypatch)
    pack_for_role(experiment=experiment, role=role, input_text=INPUT, use_cache=False)

    plans = {sql: _generic_plan(sql, params) for sql, params in statements}
    for plan in plans.values():
        assert "Seq Scan on campaigns_turn" not in plan, plan  # the turns or their terms
    postings = [plan for sql, plan in plans.items() if sql.startswith('SELECT "w"."i"')]
    assert len(postings) == 1
    assert "turn_terms_newest" in postings[0], postings[0]
    assert "search_indexed" not in postings[0]


@pytest.mark.parametrize("role", ["DM", "Thorin"])
def test_while_an_import_waits_a_search_walks_the_campaigns_turns_not_the_table(role):
    """An import's turns wait for their term rows (a `SearchBacklog` row): a search also
    reads those turns, planned with its values (not prepared), newest first through the
    experiment's index, with statistics from before the import (no turn waiting): it
    never scans every campaign's turns."""
    if not database_is_postgres():
        unavailable("the plans are PostgreSQL's")
    bench.create_campaign(TURNS, seed=3)  # another campaign's turns
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE campaigns_turn")
    imported = transcripts.import_transcript(data=_transcript(bench.create_campaign(400)))
    viewer = selectors.viewer_for_role(experiment=imported, role=role)
    query = search.postings_query(
        experiment_id=imported.pk, viewer=viewer, words=["leave", "ashfern", "the"]
    )
    assert not query.compiled.prepare
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + query.compiled.sql, query.compiled.bind(query.values))
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "Seq Scan on campaigns_turn" not in plan, plan
    assert "turn_terms_newest" in plan, plan
    expected = query.rows()
    transcripts.index_imported_turns(experiment_id=imported.pk)
    indexed = search.postings_query(
        experiment_id=imported.pk, viewer=viewer, words=["leave", "ashfern", "the"]
    )
    assert indexed.compiled.prepare
    assert expected and indexed.rows() == expected


def _transcript(experiment) -> dict:
    return transcripts.export_transcript(experiment=experiment)


def test_a_words_postings_stop_at_its_newest_readable_matches():
    """Each word's postings come from ``campaigns_turn_terms`` (migration 0037) newest
    first, by experiment and word in the index: the read stops at the word's ``DF_CAP``-th
    readable match, so it reads that many rows and the hidden ones among them, however
    many turns of the campaign (or of others) use the word."""
    if not database_is_postgres():
        unavailable("the term rows and their plans are PostgreSQL's")
    from collections import Counter

    from context_engine.ranking import DF_CAP, surface_words

    bench.create_campaign(3000, seed=3)  # another campaign using the same words
    experiment = bench.create_campaign(6000)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE campaigns_turn")
        cursor.execute("ANALYZE campaigns_turn_terms")
    viewer = selectors.viewer_for_role(experiment=experiment, role="Thorin")
    readable = selectors.turns_visible_to(experiment=experiment, viewer=viewer)
    counts = Counter(
        w for text in readable.values_list("content", flat=True) for w in set(surface_words(text))
    )
    word, readable_matches = counts.most_common(1)[0]
    assert readable_matches > DF_CAP + 100  # a common word
    query = search.postings_query(experiment_id=experiment.pk, viewer=viewer, words=[word])
    # Sent unprepared: auto_explain does not see the prepared statement's executions.
    with pg_nested_plans() as plans, connection.cursor() as cursor:
        cursor.execute(query.compiled.sql, query.compiled.bind(query.values))
        rows = cursor.fetchall()

    assert rows == query.rows()
    assert len(rows) == DF_CAP  # the cap, not every match
    term_scans = [
        line for plan in plans for line in plan.splitlines() if "turn_terms_newest" in line
    ]
    assert term_scans and all("Backward" in line for line in term_scans), plans
    read = sum(int(line.split("rows=")[-1].split()[0]) for line in term_scans)
    assert DF_CAP <= read < readable_matches, (read, readable_matches)
    assert not any("turn_exp_content_fts" in plan for plan in plans), plans
