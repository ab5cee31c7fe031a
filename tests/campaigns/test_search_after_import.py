"""An imported campaign is searchable at once, the same before and after its indexing task.

The importer leaves its turns' search rows to `campaigns.tasks.index_turn_search`, after
commit, and a `SearchBacklog` row has searches find the waiting turns meanwhile.
PostgreSQL: the rows are written without term rows (``search_indexed`` false, migrations
0017, 0037) and the task flips the flag. SQLite: the turns get no term rows (migration
0038) until the task writes them.
"""

from __future__ import annotations

import pytest
from django.db import connection

from campaigns import tasks
from campaigns.models import SearchBacklog, Turn
from campaigns.reads import search, selectors
from campaigns.services import transcripts
from campaigns.services.transcripts import indexing
from tests.factories import make_turn

pytestmark = pytest.mark.django_db

WORDS = ("brinewick", "ashfern", "kestrel", "lanternmoss", "quillfire")
ROLES = ("DM", "Thorin", "Cassia")


def _transcript(rounds: int = 310) -> dict:
    """Turns over ``rounds`` rounds, mixed audiences, several words."""
    turns = []
    for round_ in range(1, rounds + 1):
        word = WORDS[round_ % len(WORDS)]
        turns.append(
            {"round": round_, "speaker": "DM", "kind": "narrative", "content": f"The {word} glows."}
        )
        if round_ % 3 == 0:
            turns.append(
                {
                    "round": round_,
                    "speaker": "Cassia",
                    "kind": "whisper",
                    "content": f"Hide the {WORDS[(round_ + 1) % 5]} from Thorin.",
                    "visibility": ["Cassia", "DM"],
                }
            )
        if round_ % 7 == 0:
            turns.append(
                {
                    "round": round_,
                    "speaker": "Thorin",
                    "kind": "monologue",
                    "content": f"I distrust the {word}.",
                }
            )
    return {
        "experiment": {"name": "Searchable"},
        "participants": [
            {"role": role, "kind": "dm" if role == "DM" else "player"} for role in ROLES
        ],
        "turns": turns,
        "lore": [],
    }


SEARCHES = ("ashfern", "kestrel", "quillfire", "kestrel ashfern", "nothingmatches")


def _searches(experiment, roles=ROLES, texts=SEARCHES) -> dict:
    results = {}
    for role in roles:
        viewer = selectors.viewer_for_role(experiment=experiment, role=role)
        for text in texts:
            for before_round in (None, 2, 300):
                for limit in (3, 25):
                    found = search.search_turns(
                        experiment=experiment,
                        viewer=viewer,
                        text=text,
                        before_round=before_round,
                        limit=limit,
                    )
                    results[role, text, before_round, limit] = [t.seq for t in found]
    return results


def _pending(experiment) -> int:
    """The experiment's turns still waiting for the search index."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT count(*) FROM campaigns_turn WHERE experiment_id = %s "
                "AND NOT search_indexed",
                [experiment.pk],
            )
        else:  # every turn here has terms: one without term rows has not been indexed
            cursor.execute(
                "SELECT count(*) FROM campaigns_turn AS t WHERE t.experiment_id = %s AND NOT "
                "EXISTS (SELECT 1 FROM campaigns_turn_terms AS r WHERE r.experiment_id = "
                "t.experiment_id AND r.seq = t.seq)",
                [experiment.pk],
            )
        return cursor.fetchone()[0]


def _index_one_batch(experiment, seqs: range) -> None:
    """One batch of the indexing task, as if it were interrupted after it."""
    batch = (
        indexing._INDEX_BATCH if connection.vendor == "postgresql" else indexing._SQLITE_TERMS_BATCH
    )
    with connection.cursor() as cursor:
        cursor.execute(batch, [experiment.pk, seqs.start, seqs.stop])


postgres_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="search_indexed and its plans are PostgreSQL's"
)


def test_search_right_after_import_equals_search_after_the_indexing_task():
    experiment = transcripts.import_transcript(data=_transcript())
    total = experiment.turns.count()
    assert _pending(experiment) == total  # nothing in the index yet
    before = _searches(experiment)

    assert transcripts.index_imported_turns(experiment_id=experiment.pk, batch=97) == total
    assert _pending(experiment) == 0
    after = _searches(experiment)

    assert after == before
    # Not vacuous: the searches found rows, audiences differ, and rounds were cut.
    assert before["DM", "ashfern", None, 25] and before["Thorin", "kestrel", 300, 3]
    assert before["Thorin", "ashfern", None, 25] != before["DM", "ashfern", None, 25]
    assert before["Cassia", "nothingmatches", None, 25] == []


def test_search_mid_way_through_the_task_gives_the_same_rows():
    experiment = transcripts.import_transcript(data=_transcript())
    some = {"roles": ("Thorin", "DM"), "texts": ("ashfern", "kestrel ashfern")}
    before = _searches(experiment, **some)
    _index_one_batch(experiment, range(1, 251))
    assert 0 < _pending(experiment) < experiment.turns.count()
    assert _searches(experiment, **some) == before
    assert before["Thorin", "ashfern", 300, 25] and before["DM", "kestrel ashfern", None, 3]


def test_the_indexing_task_is_idempotent_and_a_second_run_writes_nothing():
    experiment = transcripts.import_transcript(data=_transcript(rounds=40))
    total = experiment.turns.count()
    assert tasks.index_turn_search.delay(experiment.pk).get() == total
    version = type(experiment).objects.get(pk=experiment.pk).pack_version
    assert tasks.index_turn_search.delay(experiment.pk).get() == 0
    # A run that finds nothing pending updates no row (so no trigger bumps the version).
    assert type(experiment).objects.get(pk=experiment.pk).pack_version == version
    assert tasks.index_turn_search.delay(10**9).get() == 0  # a deleted experiment: nothing


def test_import_queues_the_indexing_task_after_commit(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        experiment = transcripts.import_transcript(data=_transcript(rounds=30))
    assert len(callbacks) == 1
    assert _pending(experiment) == 0  # the (eager) task ran once the import committed


def test_turns_written_one_at_a_time_are_indexed_at_once(campaign):
    turn = make_turn(campaign, content="The brinewick oil is gone.")
    assert _pending(campaign) == 0
    viewer = selectors.viewer_for_role(experiment=campaign, role="Thorin")
    found = search.search_turns(experiment=campaign, viewer=viewer, text="brinewick")
    assert [t.pk for t in found] == [turn.pk]


def test_an_import_after_deleted_turns_takes_fresh_ids_and_is_searchable(campaign):
    """SQLite assigns the ids itself (AUTOINCREMENT never reuses one): the term rows the
    task writes must point at the right turns, and the insert trigger must be back."""
    old = [make_turn(campaign, content=f"old turn {i}") for i in range(3)]
    Turn.objects.filter(pk__in=[t.pk for t in old]).delete()
    source = _transcript(rounds=12)
    experiment = transcripts.import_transcript(data=source)
    ids = list(experiment.turns.order_by("seq").values_list("id", flat=True))
    assert min(ids) > max(t.pk for t in old)
    assert ids == sorted(ids)
    viewer = selectors.viewer_for_role(experiment=experiment, role="DM")
    found = search.search_turns(experiment=experiment, viewer=viewer, text="quillfire")
    expected = [t["content"] for t in reversed(source["turns"]) if "quillfire" in t["content"]]
    assert len(expected) == 3
    assert [t.content for t in found] == expected
    transcripts.index_imported_turns(experiment_id=experiment.pk)
    found = search.search_turns(experiment=experiment, viewer=viewer, text="quillfire")
    assert [t.content for t in found] == expected
    later = make_turn(experiment, round=13, content="A fresh quillfire.")
    found = search.search_turns(experiment=experiment, viewer=viewer, text="quillfire")
    assert found[0].pk == later.pk  # written one at a time: indexed by the trigger again


@postgres_only
def test_the_backlog_row_stays_while_any_turn_is_still_pending():
    experiment = transcripts.import_transcript(data=_transcript(rounds=20))
    with connection.cursor() as cursor:  # a pending row the task's range does not cover
        cursor.execute(
            "UPDATE campaigns_turn SET search_indexed = true WHERE experiment_id = %s",
            [experiment.pk],
        )
        cursor.execute(
            "UPDATE campaigns_turn SET search_indexed = false WHERE id = %s",
            [experiment.turns.order_by("seq").first().pk],
        )
        cursor.execute(indexing._BACKLOG_DONE, [experiment.pk])
    assert SearchBacklog.objects.filter(experiment=experiment).exists()
    assert transcripts.index_imported_turns(experiment_id=experiment.pk) == 1
    assert not SearchBacklog.objects.filter(experiment=experiment).exists()


def test_an_import_leaves_a_backlog_row_until_the_task_has_indexed_its_turns():
    experiment = transcripts.import_transcript(data=_transcript(rounds=5))
    assert SearchBacklog.objects.filter(experiment=experiment).exists()
    transcripts.index_imported_turns(experiment_id=experiment.pk)
    assert not SearchBacklog.objects.filter(experiment=experiment).exists()


def test_once_indexed_a_search_reads_the_term_rows_and_no_turn_text():
    """While the backlog stands a search scans the campaign's waiting turns (their text,
    for the terms); once the task is done, only the term rows."""
    from django.test.utils import CaptureQueriesContext

    experiment = transcripts.import_transcript(data=_transcript(rounds=30))
    viewer = selectors.viewer_for_role(experiment=experiment, role="DM")

    def postings_sql() -> str:
        with CaptureQueriesContext(connection) as queries:
            search.search_turns(experiment=experiment, viewer=viewer, text="ashfern")
        return "\n".join(q["sql"] for q in queries.captured_queries)

    waiting = postings_sql()
    transcripts.index_imported_turns(experiment_id=experiment.pk)
    done = postings_sql()
    scan = "plainto_tsquery(" if connection.vendor == "postgresql" else "babel_terms("
    assert scan in waiting
    assert scan not in done and "campaigns_turn_terms" in done


def _estimated_turns(experiment) -> float:
    with connection.cursor() as cursor:
        cursor.execute(
            "EXPLAIN (FORMAT JSON) SELECT id FROM campaigns_turn WHERE experiment_id = %s",
            [experiment.pk],
        )
        return cursor.fetchone()[0][0]["Plan"]["Plan Rows"]


@postgres_only
def test_after_indexing_an_import_the_planner_knows_the_campaigns_size():
    """The search plans its matches with the table's statistics (migration 0022): right
    after an import they describe a campaign of no turns."""
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE campaigns_turn")
    experiment = transcripts.import_transcript(data=_transcript())
    imported = experiment.turns.count()
    assert _estimated_turns(experiment) < imported / 10

    transcripts.index_imported_turns(experiment_id=experiment.pk)
    assert _estimated_turns(experiment) > imported / 2
    assert transcripts.index_imported_turns(experiment_id=experiment.pk) == 0
