"""PostgreSQL: the background task's work of adding an import's turns to the full-text index."""

from __future__ import annotations

from django.db import connection, transaction

SEARCH_INDEX_BATCH = 5000  # rows per UPDATE (and per transaction) of the indexing task


def index_imported_turns(*, experiment_id: int, batch: int = SEARCH_INDEX_BATCH) -> int:
    """PostgreSQL: add an import's turns to the full-text index; how many it indexed.

    The body of `campaigns.tasks.index_turn_search`. Flips ``search_indexed`` on the
    experiment's pending rows ``batch`` at a time, each batch its own transaction (short
    locks; a crash keeps what is done), then deletes the experiment's `SearchBacklog` row
    (searches stop scanning for pending rows). Idempotent: a second run finds nothing
    pending and writes no turn. Searches give the same rows before, during and after (see
    `babel_turn_postings`, migrations 0034 and 0035). SQLite indexes during the import: 0.

    Having indexed anything, it refreshes the turns table's statistics: the search plans
    its matches with them, and until autovacuum notices the import (a minute at best; not
    before a tenth of the table has changed) they describe a campaign of no turns, for
    which walking its turns and checking the words one by one looks cheaper than the
    full-text index.
    """
    if connection.vendor != "postgresql":
        return 0
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
    return done


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
