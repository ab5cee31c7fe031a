"""SQLite's postings: ranked retrieval's matches of every query word, the newest
readable ones per word (`postings`; `backlog_postings` while an import's turns wait for
their term rows).

Part of `campaigns.reads.search` (which picks this or `search_postgres` by vendor): the
statements are built from the selectors' own rules and precompiled the same way, so no
visibility rule is written twice. A word is looked up by its term, `ranking.stem` of it,
as the term rows were made (`babel_terms`, migration 0038).
"""

from __future__ import annotations

from django.db.models import BooleanField
from django.db.models.expressions import RawSQL

from campaigns.models.search_terms import SQL_NAME
from campaigns.reads import selectors
from campaigns.reads.packs import over_rows, slot_viewer
from campaigns.reads.precompiled import Precompiled, compile_once

_SAME_TERM = '"campaigns_turn"."term" = %s'
# A turn without term rows yet: its content's terms, made as the rows would be.
_HAS_TERM = (
    f'EXISTS (SELECT 1 FROM json_each({SQL_NAME}("campaigns_turn"."content")) AS "terms" '
    'WHERE "terms"."value" = %s)'
)


def postings(viewer, columns: tuple[str, ...], limit: int, words: int) -> Precompiled:
    """Per word, its newest ``limit`` readable matches: rows ``(word, *columns)``, word
    0-based, in no set order (`search.in_word_order` puts them by word, each word's
    newest first). ``words``: how many words it takes.

    From the term rows (``campaigns_turn_terms``, clustered by experiment, term and seq):
    a word's matches are one key range walked newest first, the selector's turn rule
    applied to each row as to the table's (the rows copy the columns it reads), stopped
    at the ``limit``-th readable one, and only past the seq ``i.since`` (a word whose
    older matches `postings_cache` holds). Values, per word ``i``: ``i.experiment``,
    ``i.term``, ``i.since`` and the viewer's (`slot_values`)."""
    return _union(
        ("postings", viewer.omniscient, viewer.is_dm, columns, limit),
        words,
        _word_postings(viewer, columns, limit, source="campaigns_turn_terms"),
    )


def backlog_postings(viewer, columns: tuple[str, ...], limit: int, words: int) -> Precompiled:
    """`postings`' rows for an experiment with a `SearchBacklog` row (an import's turns
    have no term rows until `index_imported_turns` has made them): the experiment's
    readable turns, newest first, whose content has the term. A scan of the
    experiment's turns per word, for as long as the backlog lasts."""
    return _union(
        ("backlog-postings", viewer.omniscient, viewer.is_dm, columns, limit),
        words,
        _word_postings(viewer, columns, limit, source=None),
    )


def _word_postings(viewer, columns, limit, *, source: str | None) -> Precompiled:
    key = ("sqlite-word", source, viewer.omniscient, viewer.is_dm, columns, limit)

    def build(slots):
        readable = selectors.turns_visible_to(
            experiment=slots.int("experiment"), viewer=slot_viewer(slots, viewer)
        )
        condition = _SAME_TERM if source is not None else _HAS_TERM
        matching = readable.filter(RawSQL(condition, [slots.str("term")], BooleanField()))
        if source is not None:  # only the matches after a seq (the postings cache's)
            matching = matching.filter(seq__gt=slots.int("since"))
        return matching.order_by("-seq").values_list(*columns)[:limit]

    compiled = compile_once(key, build)
    return over_rows(compiled, source) if source is not None else compiled


def _union(key: tuple, words: int, one: Precompiled) -> Precompiled:
    """``one`` (a word's newest readable matches) for each of ``words`` words, in one
    statement: each word's values are named ``i.name``."""
    found = _joined.get((*key, words))
    if found is not None:
        return found
    sql = " UNION ALL ".join(f"SELECT {i} AS word, * FROM ({one.sql})" for i in range(words))
    params = [
        (f"{i}.{name}" if name is not None else None, literal)
        for i in range(words)
        for name, literal in one.params
    ]
    # No ORDER BY: `search.in_word_order` sorts the rows (SQLite sorted them in a temporary
    # b-tree, ~0.2 ms for the ~1,000 rows of a pack's words new to it).
    found = _joined[(*key, words)] = Precompiled(sql, params)
    return found


_joined: dict[tuple, Precompiled] = {}
