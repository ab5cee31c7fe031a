"""On PostgreSQL the pack loader's batched reads are prepared and run on generic plans
(`precompiled.run_all`, `BABEL_PG_PREPARE`): planned once per connection, and — what a
generic plan could get wrong — never by reading a whole campaign's turns."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from campaigns import bench
from campaigns.models import Experiment, SearchBacklog
from campaigns.reads import precompiled, search, selectors
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
    before = _pack_statements()
    for _ in range(4):
        pack_for_role(experiment=campaign, role="Thorin", input_text=INPUT, use_cache=False)
    after = _pack_statements()
    ran = {sql: plans for sql, plans in after.items() if plans != before.get(sql)}
    assert len(ran) == 2  # the two round trips of a pack
    for generic, custom in ran.values():
        assert custom == 0
        assert generic >= 4


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


def _turns_checked_word_by_word(plan: str) -> int:
    """Rows a plan read and then dropped by computing ``to_tsvector`` on them (a walk of
    the experiment's turns instead of a look-up in the full-text index)."""
    checked, in_word_filter = 0, False
    for line in plan.splitlines():
        if "->" in line:
            in_word_filter = False
        if line.strip().startswith("Filter:") and "to_tsvector" in line:
            in_word_filter = True
        elif in_word_filter and "Rows Removed by Filter:" in line:
            checked += int(line.rsplit(":", 1)[1])
    return checked


@pytest.mark.parametrize("turns", [1000, TURNS])
@pytest.mark.parametrize("role", ["DM", "Thorin"])
def test_a_packs_search_looks_its_words_up_in_the_index(monkeypatch, turns, role):
    """Prepared blind to the values, the search once walked a small campaign's turns and
    computed ``to_tsvector`` on each (40-50 ms a pack at 1,000 turns). A pack's postings
    now read each word's term rows from their index (migration 0037), prepared once; while
    an import's turns wait for the index (a `SearchBacklog` row) they come from
    `babel_turn_postings`, planned per call with the values, and the prepared statement
    applies visibility to the rows the function returns (`test_a_campaign_among_bigger_
    ones_reads_only_its_own_matches`). The generic plans never join the matches to a scan
    of every turn (with a small table it once had, a plan it would keep as the table
    grew)."""
    if not database_is_postgres():
        unavailable("prepared statements and generic plans are PostgreSQL's")
    experiment = bench.create_campaign(turns)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE campaigns_turn")  # as autovacuum would have by now
        cursor.execute("ANALYZE campaigns_turn_terms")
    statements = _recorded_statements(monkeypatch)
    with CaptureQueriesContext(connection) as everything:
        pack_for_role(experiment=experiment, role=role, input_text=INPUT, use_cache=False)
    with pg_nested_plans() as plans:
        pack_for_role(experiment=experiment, role=role, input_text=INPUT, use_cache=False)

    searches = [plan for plan in plans if "to_tsvector" in plan]
    assert searches, plans
    for plan in searches:
        assert _turns_checked_word_by_word(plan) < 100, plan
    # The postings read the term rows' index; the full-text search is for a backlog only.
    assert any("turn_terms_newest" in plan for plan in plans), plans
    assert not any("babel_turn_postings" in q["sql"] for q in everything.captured_queries)
    for sql, params in statements:
        plan = _generic_plan(sql, params)
        assert "Seq Scan on campaigns_turn" not in plan, plan


def _heap_rows_of_the_word_scans(plans: list[str]) -> list[tuple[bool, int]]:
    """For each word's index scan in the postings' plans: whether the index itself kept
    to the experiment, and how many rows it gave the heap."""
    scans = []
    for plan in plans:
        lines = plan.splitlines()
        for at, line in enumerate(lines):
            if "Bitmap Index Scan on turn_exp_content_fts" in line:
                rows = int(line.split("rows=")[-1].split()[0])
                scans.append(("experiment_id" in lines[at + 1], rows))
    return scans


def test_a_campaign_among_bigger_ones_reads_only_its_own_matches():
    """The full-text index is keyed by experiment and word (migration 0035): where a
    search uses it (words whose turns are not all in ``campaigns_turn_terms`` yet, during
    an import's indexing), a small campaign's search gives the heap its own matches, not
    every campaign's. A campaign with at least half of the turns searches by word alone
    (the experiment's entry in the index would list most of the table). The same postings
    either way."""
    if not database_is_postgres():
        unavailable("the full-text index and its plans are PostgreSQL's")
    big = bench.create_campaign(3000)
    small = bench.create_campaign(200)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE campaigns_turn")
    owned = {
        experiment.pk: set(experiment.turns.values_list("id", flat=True))
        for experiment in (big, small)
    }

    for experiment, keyed in ((small, True), (big, False)):
        SearchBacklog.objects.create(experiment=experiment)  # as during an import's indexing
        viewer = selectors.viewer_for_role(experiment=experiment, role="DM")
        query = search.postings_query(
            experiment_id=experiment.pk, viewer=viewer, words=["ashfern", "leave"]
        )
        with pg_nested_plans() as plans:
            rows = query.rows()
        assert rows and {row[1] for row in rows} <= owned[experiment.pk]
        scans = _heap_rows_of_the_word_scans(plans)
        assert len(scans) == 2, plans
        assert all(by_experiment is keyed for by_experiment, _ in scans), plans
        if keyed:  # only the small campaign's own matches (any audience) reach the heap
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT count(*) FROM babel_turn_postings(%s, %s::text[], %s)",
                    [experiment.pk, ["ashfern", "leave"], 10**6],
                )
                assert sum(found for _, found in scans) == cursor.fetchone()[0]


def test_a_words_postings_stop_at_its_newest_readable_matches():
    """Each word's postings come from ``campaigns_turn_terms`` (migration 0037) newest
    first, by experiment and word in the index: the read stops at the word's ``DF_CAP``-th
    readable match, so it reads that many rows and the hidden ones among them, however
    many turns of the campaign (or of others) use the word. No GIN search runs."""
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
