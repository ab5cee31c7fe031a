"""PostgreSQL's postings: ranked retrieval's matches of every query word at once, the
newest readable ones per word (`postings`; `backlog_postings` while an import's turns
wait for the index).

Part of `campaigns.reads.search` (which picks this or `search_sqlite` by vendor): the
statements are built from the selectors' own rules and precompiled the same way, so no
visibility rule is written twice. One statement whatever the number of words (the words
are an array value, each read in a lateral subquery), prepared once per kind of viewer.
"""

from __future__ import annotations

from django.db.models import BooleanField
from django.db.models.expressions import RawSQL

from campaigns.reads import selectors
from campaigns.reads.packs import over_rows, slot_viewer
from campaigns.reads.precompiled import Precompiled, compile_once

# A word's term: its lexeme as the term rows were made (``to_tsvector('english', …)``,
# migration 0037), from the lateral subquery's outer word ``w.q``. A word of
# `ranking.surface_words` (letters and digits) is one token to PostgreSQL's parser, so
# one lexeme, or none for a stopword (which matches nothing).
_SAME_TERM = (
    '"campaigns_turn"."term" = (tsvector_to_array(to_tsvector(\'english\'::regconfig, "w"."q")))[1]'
)
# A turn an import left outside the index (no term rows yet) that has the word.
_WAITING_WITH_TERM = (
    'NOT "campaigns_turn"."search_indexed" AND '
    'to_tsvector(\'english\'::regconfig, "campaigns_turn"."content") @@ '
    'plainto_tsquery(\'english\'::regconfig, "w"."q")'
)
# Only a word's matches after the seq ``w.since`` (a word whose older matches the
# postings cache holds; `search.ALL_SEQS` for all of them).
_SINCE = '"campaigns_turn"."seq" > "w"."since"'
_WORDS = 'unnest(%s::text[], %s::integer[]) WITH ORDINALITY AS "w"("q", "since", "i")'


def postings(viewer, columns: tuple[str, ...], limit: int) -> Precompiled:
    """Per word, its newest ``limit`` readable matches: rows ``(word, *columns)``, by word
    (0-based, the order of the ``queries`` value), each word's newest first.

    From the term rows (`campaigns_turn_terms`, migration 0037): their index gives a
    word's matches newest first with every column the selector's turn rule reads, the
    rule is applied to them as to the table's rows, and the read stops at the
    ``limit``-th readable one however many turns (hidden or not) use the word. Only for
    an experiment without a `SearchBacklog` row (`backlog_postings` otherwise). Values:
    ``experiment``, ``queries`` (the words), ``since`` (per word, the seq its term rows
    are read after) and the viewer's (`slot_values`)."""
    key = ("postings", viewer.omniscient, viewer.is_dm, columns, limit)
    found = _joined.get(key)
    if found is None:
        newest = _term_rows(viewer, columns, limit)
        found = _joined[key] = _per_word(newest.sql, newest.params, columns)
    return found


def backlog_postings(viewer, columns: tuple[str, ...], limit: int) -> Precompiled:
    """`postings`' rows for an experiment with a `SearchBacklog` row: an import's turns
    have no term rows until
    `index_imported_turns` flips their ``search_indexed``. A word's newest readable
    matches among the term rows and, through the small partial index of the waiting
    turns (migration 0017), among those whose text has the word: the two sets do not
    overlap, so the newest ``limit`` of both are the word's. Values: `postings`'.

    Not prepared: planned on each run with its values, so the waiting turns are walked
    through the experiment's (experiment, seq) index. A generic plan, blind to the
    experiment and with statistics from before the import (no waiting turn), scanned
    the whole table for them; a backlog lasts only until the task has run. ``since``
    bounds the term rows only: the postings cache never reads an experiment with a
    backlog, so it is always `search.ALL_SEQS` here."""
    key = ("backlog-postings", viewer.omniscient, viewer.is_dm, columns, limit)
    found = _joined.get(key)
    if found is None:
        indexed = _term_rows(viewer, columns, limit)

        def build(slots):
            waiting = RawSQL(_WAITING_WITH_TERM, [], BooleanField())
            readable = _readable(slots, viewer).filter(waiting)
            return readable.order_by("-seq").values_list(*columns)[:limit]

        waiting = compile_once(("postings-waiting", *key), build)
        both = (
            f'SELECT * FROM (({indexed.sql}) UNION ALL ({waiting.sql})) AS "both" '
            f'ORDER BY "seq" DESC LIMIT {int(limit)}'
        )
        params = (*indexed.params, *waiting.params)
        found = _joined[key] = _per_word(both, params, columns, prepare=False)
    return found


def _term_rows(viewer, columns: tuple[str, ...], limit: int) -> Precompiled:
    """A word's (``w.q``) newest ``limit`` readable term rows."""

    def build(slots):
        same_term = RawSQL(_SAME_TERM, [], BooleanField())
        since = RawSQL(_SINCE, [], BooleanField())
        readable = _readable(slots, viewer).filter(same_term).filter(since)
        return readable.order_by("-seq").values_list(*columns)[:limit]

    key = ("postings-terms", viewer.omniscient, viewer.is_dm, columns, limit)
    return over_rows(compile_once(key, build), "campaigns_turn_terms")


def _readable(slots, viewer):
    return selectors.turns_visible_to(
        experiment=slots.int("experiment"), viewer=slot_viewer(slots, viewer)
    )


def _per_word(
    one_word: str, params: tuple, columns: tuple[str, ...], *, prepare: bool = True
) -> Precompiled:
    """``one_word`` (a read of the outer word ``w.q``'s matches) for every word of the
    ``queries`` value, in one statement."""
    listed = ", ".join(f'"t"."{name}"' for name in columns)
    sql = (
        f'SELECT "w"."i" - 1 AS "word", {listed} FROM {_WORDS} '
        f'CROSS JOIN LATERAL ({one_word}) AS "t" ORDER BY 1, "t"."seq" DESC'
    )
    # Columns named, so `run_all` may send it with other statements (`context_ahead.ahead`).
    named = tuple((name, False) for name in ("word", *columns))
    return Precompiled(sql, (("queries", None), ("since", None), *params), named, prepare=prepare)


_joined: dict[tuple, Precompiled] = {}
