"""The background task's work of adding an import's turns to the search index (their term
rows)."""

from __future__ import annotations

from django.db import connection, transaction

from campaigns.models import SearchBacklog

SEARCH_INDEX_BATCH = 5000  # rows per UPDATE (and per transaction) of the indexing task


def index_imported_turns(*, experiment_id: int, batch: int = SEARCH_INDEX_BATCH) -> int:
    """Add an import's turns to the search index; how many turns it indexed.

    The body of `campaigns.tasks.index_turn_search`. Works ``batch`` turns at a time,
    each batch its own transaction (short locks; a crash keeps what is done), then
    deletes the experiment's `SearchBacklog` row (searches stop scanning for waiting
    turns). Idempotent: a second run finds nothing waiting and writes nothing. Searches
    give the same rows before, during and after.

    - PostgreSQL: flips ``search_indexed`` on the experiment's pending rows, which gives
      them (trigger, migration 0037) their term rows. Having indexed anything, it
      refreshes both tables' statistics: until autovacuum notices the import (a minute at
      best; not before a tenth of the table has changed) they describe a campaign of no
      turns, and the planner's choices with them.
    - SQLite: writes the term rows of the experiment's turns (migration 0038; rows that
      turns written since the import already have are kept), while its backlog row
      stands.
    """
    if connection.vendor == "sqlite":
        return _index_sqlite(experiment_id, batch)
    with connection.cursor() as cursor:
        cursor.execute(_PENDING_SEQS, [experiment_id])
        low, high = cursor.fetchone()
    done = 0
    seqs = range(low, high + 1, batch) if low is not None else ()
    for start in seqs:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(_INDEX_BATCH, [experiment_id, start, start + batch])
            done += cursor.rowcount
    with connection.cursor() as cursor:
        cursor.execute(_BACKLOG_DONE, [experiment_id])
        if done:
            cursor.execute("ANALYZE campaigns_turn")
            cursor.execute("ANALYZE campaigns_turn_terms")
    return done


def _index_sqlite(experiment_id: int, batch: int) -> int:
    if not SearchBacklog.objects.filter(experiment_id=experiment_id).exists():
        return 0
    with connection.cursor() as cursor:
        cursor.execute(_SQLITE_SEQS, [experiment_id])
        low, high = cursor.fetchone()
    done = 0
    for start in range(low, high + 1, batch) if low is not None else ():
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(_SQLITE_TERMS_BATCH, [experiment_id, start, start + batch])
            cursor.execute(_SQLITE_COUNT, [experiment_id, start, start + batch])
            done += cursor.fetchone()[0]
    SearchBacklog.objects.filter(experiment_id=experiment_id).delete()
    return done


_SQLITE_SEQS = "SELECT min(seq), max(seq) FROM campaigns_turn WHERE experiment_id = %s"
# A batch's term rows as the insert trigger writes them (migration 0038), in key order;
# those a turn written since the import already has are left as they are.
_SQLITE_TERMS_BATCH = (
    "INSERT OR IGNORE INTO campaigns_turn_terms SELECT t.experiment_id, terms.value, t.seq, "
    "t.id, t.round, t.tokens, t.held_at, t.visibility, t.kind, t.speaker "
    "FROM campaigns_turn AS t, json_each(babel_terms(t.content)) AS terms "
    "WHERE t.experiment_id = %s AND t.seq >= %s AND t.seq < %s ORDER BY 1, 2, 3"
)
_SQLITE_COUNT = (
    "SELECT count(*) FROM campaigns_turn WHERE experiment_id = %s AND seq >= %s AND seq < %s"
)


# Batches by seq range, through the (experiment, seq) unique index: a LIMIT over the
# pending rows would walk past every row already flipped in this run, batch after batch.
# NOT search_indexed: rows a concurrent run already flipped are left alone.
_PENDING_SEQS = (
    "SELECT min(seq), max(seq) FROM campaigns_turn WHERE experiment_id = %s AND NOT search_indexed"
)
_INDEX_BATCH = (
    "UPDATE campaigns_turn SET search_indexed = true "
    "WHERE experiment_id = %s AND seq >= %s AND seq < %s AND NOT search_indexed"
)
# Only once no row is pending: a search that still finds the backlog row scans for them.
_BACKLOG_DONE = (
    "DELETE FROM campaigns_searchbacklog b WHERE b.experiment_id = %s AND NOT EXISTS "
    "(SELECT 1 FROM campaigns_turn t WHERE t.experiment_id = b.experiment_id "
    "AND NOT t.search_indexed)"
)
