"""PostgreSQL's full-text postings: ranked retrieval's matches of every query word at
once (`postings`), the newest readable ones per word.

Part of `campaigns.reads.search` (which picks this or SQLite's FTS5 by vendor): the
statement is built from the selectors' own rules and precompiled the same way, so no
visibility rule is written twice.
"""

from __future__ import annotations

from django.db.models import BooleanField, IntegerField
from django.db.models.expressions import RawSQL

from campaigns.reads import selectors
from campaigns.reads.packs import TURN_TABLE_FROM, slot_viewer
from campaigns.reads.precompiled import Precompiled, compile_once

# What `babel_turn_postings` returns for each match (after the word's position): the
# postings' columns and every column the selector's turn rule reads. The rule is applied
# to those rows as it would be to the table's (they stand in for "campaigns_turn" under
# its own name), so a rule that came to read another column fails loudly ("column does
# not exist"), it never reads past the rule.
MATCH_ROW_COLUMNS = (
    "id",
    "seq",
    "round",
    "tokens",
    "experiment_id",
    "held_at",
    "visibility",
    "kind",
    "speaker",
)


def _over_matches(compiled: Precompiled, source: str, params: tuple) -> Precompiled:
    """``compiled`` (the selector's newest readable turns) run over the rows of ``source``
    (the matches, under the table's own name) instead of the table; ``params`` are
    ``source``'s own."""
    head, found, tail = compiled.sql.partition(TURN_TABLE_FROM)
    if not found or "%s" in head or TURN_TABLE_FROM in tail:  # pragma: no cover - shape guard
        raise ValueError("Unexpected SQL shape for reading the matches' rows.")
    sql = f'{head} FROM {source} AS "campaigns_turn" WHERE {tail}'
    return Precompiled(sql, (*params, *compiled.params), compiled.columns)


# --- ranked retrieval's postings ---------------------------------------------------------

# A word's term: its lexeme as the turns' terms were made (migration 0037), from the
# lateral subquery's outer word ``w.q``. A word of `ranking.surface_words` (letters and
# digits) is one token to PostgreSQL's parser, so one lexeme, or none for a stopword
# (which matches nothing, as through the full-text index).
_PG_SAME_TERM = (
    '"campaigns_turn"."term" = (tsvector_to_array(to_tsvector(\'english\'::regconfig, "w"."q")))[1]'
)
# Every query word's newest matches (any audience) from one call of `babel_turn_postings`
# (migrations 0034, 0035): one statement planned with its values. ``word`` is the word's
# 1-based position.
_PG_POSTINGS = "babel_turn_postings(%s, %s::text[], %s)"
# The words the bounded scan cut short, in their positions (null for the others): only
# these are searched again without the scan limit.
_PG_SHORT_QUERIES = (
    "ARRAY(SELECT CASE WHEN o.i IN (SELECT word FROM short) THEN o.q END "
    "FROM unnest(%s::text[]) WITH ORDINALITY AS o(q, i) ORDER BY o.i)"
)


def _readable(viewer):
    def readable(slots):
        return selectors.turns_visible_to(
            experiment=slots.int("experiment"), viewer=slot_viewer(slots, viewer)
        )

    return readable


def _check_columns(columns: tuple[str, ...]) -> None:
    if not set(columns) <= set(MATCH_ROW_COLUMNS):  # pragma: no cover - the postings' own
        raise ValueError(f"Postings read only the matches' own columns, not {columns}.")


def postings(viewer, columns: tuple[str, ...], limit: int) -> Precompiled:
    """Per word, its newest ``limit`` readable matches: rows ``(word, *columns)``, by word
    (0-based, the order of the ``queries`` value), each word's newest first.

    From the term rows (`campaigns_turn_terms`, migration 0037): their index gives a
    word's matches newest first with every column the selector's turn rule reads, the
    rule is applied to them as to the table's rows, and the read stops at the
    ``limit``-th readable one however many turns (hidden or not) use the word. Only for
    an experiment without a `SearchBacklog` row: an import's turns get their term rows
    when `index_imported_turns` indexes them (`backlog_postings` meanwhile). One
    statement whatever the number of words, prepared once per kind of viewer. Values:
    ``experiment``, ``queries`` (the words) and the viewer's (`slot_values`)."""
    key = ("postings", viewer.omniscient, viewer.is_dm, columns, limit)
    found = _joined.get(key)
    if found is not None:
        return found
    _check_columns(columns)
    readable = _readable(viewer)

    def build(slots):
        same_term = RawSQL(_PG_SAME_TERM, [], BooleanField())
        return readable(slots).filter(same_term).order_by("-seq").values_list(*columns)[:limit]

    newest = _over_matches(
        compile_once(("postings-terms", *key), build), "campaigns_turn_terms", ()
    )
    listed = ", ".join(f'"t"."{name}"' for name in columns)
    sql = (
        f'SELECT "w"."i" - 1 AS "word", {listed} FROM unnest(%s::text[]) WITH ORDINALITY '
        f'AS "w"("q", "i") CROSS JOIN LATERAL ({newest.sql}) AS "t" ORDER BY 1, "t"."seq" DESC'
    )
    found = _joined[key] = Precompiled(sql, (("queries", None), *newest.params), prepare=True)
    return found


def backlog_postings(viewer, columns: tuple[str, ...], limit: int) -> Precompiled:
    """`postings`' rows for an experiment with a `SearchBacklog` row (an import's turns
    still waiting for the index, so for their term rows): `babel_turn_postings`'
    full-text search, which scans the waiting turns too.

    A word's readable turns among its newest ``scan_limit`` matches, or — only for the
    words whose scan stopped at ``scan_limit`` with fewer than ``limit`` readable among
    them — among all its matches (a GIN index cannot order by seq, so the scan is
    bounded; hidden matches — 510 GM notes using a word — must not push a player's own
    turn out of it). Visibility is the selector's rule, applied to the function's rows
    before any limit that could drop a readable match. Values: `postings`' and
    ``scan_limit``, ``cap``."""
    key = ("backlog-postings", viewer.omniscient, viewer.is_dm, columns, limit)
    found = _joined.get(key)
    if found is not None:
        return found
    _check_columns(columns)
    readable = _readable(viewer)

    def build(slots):
        word = RawSQL('"campaigns_turn"."word"', [], IntegerField())
        return readable(slots).order_by().annotate(word=word).values_list("word", *columns)

    base = compile_once(("postings-readable", *key), build)
    bounded = _over_matches(base, "scanned", ())
    unbounded = _over_matches(
        base,
        _PG_POSTINGS.replace("%s::text[]", _PG_SHORT_QUERIES, 1),
        (("experiment", None), ("queries", None), ("cap", None)),
    )
    listed = ", ".join(f'"{name}"' for name in columns)
    sql = (
        f"WITH scanned AS MATERIALIZED (SELECT * FROM {_PG_POSTINGS}), "
        f"bounded AS MATERIALIZED ({bounded.sql}), "
        "short AS MATERIALIZED (SELECT s.word FROM (SELECT word, count(*) AS n FROM scanned "
        "GROUP BY word) AS s LEFT JOIN (SELECT word, count(*) AS n FROM bounded GROUP BY word) "
        f"AS b USING (word) WHERE s.n >= %s AND coalesce(b.n, 0) < {int(limit)}), "
        "found AS (SELECT * FROM bounded WHERE word NOT IN (SELECT word FROM short) "
        f"UNION ALL SELECT * FROM ({unbounded.sql}) AS all_hits "
        "WHERE EXISTS (SELECT 1 FROM short)) "
        f'SELECT "word" - 1 AS "word", {listed} FROM (SELECT *, row_number() OVER '
        '(PARTITION BY "word" ORDER BY "seq" DESC) AS "newest" FROM found) AS ranked '
        f'WHERE "newest" <= {int(limit)} ORDER BY 1, "seq" DESC'
    )
    found = _joined[key] = Precompiled(
        sql,
        (
            ("experiment", None),
            ("queries", None),
            ("scan_limit", None),
            *bounded.params,
            ("scan_limit", None),
            *unbounded.params,
        ),
        prepare=True,
    )
    return found


_joined: dict[tuple, Precompiled] = {}
