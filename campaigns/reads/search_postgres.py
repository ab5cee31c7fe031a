"""PostgreSQL's full-text search: each word's newest readable matches, bounded
(`newest_matches`), and ranked retrieval's postings of every query word at once
(`postings`).

Part of `campaigns.reads.search` (which picks this or SQLite's FTS5 by vendor): the
statements are built from the selectors' own rules and precompiled the same way, so no
visibility rule is written twice.
"""

from __future__ import annotations

from django.db.models import BooleanField, IntegerField
from django.db.models.expressions import RawSQL

from campaigns.reads import selectors
from campaigns.reads.packs import TURN_TABLE_FROM, slot_viewer
from campaigns.reads.precompiled import Precompiled, compile_once

# PostgreSQL: the newest ``scan_limit`` matches of an experiment in a round range, from
# `babel_turn_match_rows` (migration 0033). Which plan is best (the GIN index, or the
# experiment's btree with the words checked row by row) depends on the values, so the
# function plans its statement on every call with them: a generic plan, blind to them,
# walked a small campaign's turns computing to_tsvector on each. Turns an import left
# outside the GIN index are matched too, only while the experiment has a `SearchBacklog`
# row. The function returns each match's `MATCH_ROW_COLUMNS`, and the caller's statement
# applies the selector's visibility rule to those rows as it would to the table's (they
# stand in for "campaigns_turn" under its own name). A search for other columns (the
# text) reads the turns of the matched ids by primary key (``= ANY`` of an array: an IN
# subquery was planned, on a small table, as a join to a scan of every turn) and applies
# visibility to them.
_PG_MATCH_ROWS = "babel_turn_match_rows(%s, %s, %s, %s, %s)"
# What the function returns: the postings' columns and every column the selector's turn
# rule reads. A rule that came to read another column fails loudly here ("column does not
# exist"), it never reads past the rule.
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
_PG_MATCHES = f'"campaigns_turn"."id" = ANY(ARRAY(SELECT id FROM {_PG_MATCH_ROWS}))'


def newest_matches(key, viewer, before_round, limit, columns) -> Precompiled:
    """Newest readable matches, bounded on PostgreSQL (a GIN index cannot order by seq).

    Without ``before_round``: the newest readable matches (`_exact`). With it, two tiers
    in one statement: the matches of the last `search.RECENT_SEARCH_ROUNDS` rounds before
    ``before_round`` (with fresh statistics, a BitmapAnd of the GIN index and the
    (experiment, round, seq) btree, so only those rows' heap pages are read, whatever the
    history length), and — only when that gave fewer than ``limit`` readable rows (a
    one-time filter: otherwise never executed) — the older rounds. The caller takes the
    newest ``limit`` of the union: exactly the newest ``limit`` readable matches the
    single query would give, visibility applied to both tiers by the same selector-built
    SQL.
    """
    if before_round is None:
        return _exact(("older", *key), viewer, columns, limit, (0, "cap"))
    older = _exact(("older", *key), viewer, columns, limit, (0, "recent_from"))
    found = _joined.get(key)
    if found is None:
        first = _exact(("recent", *key), viewer, columns, limit, ("recent_from", "before_round"))
        sql = (
            f"WITH recent AS MATERIALIZED ({first.sql}) SELECT * FROM recent UNION ALL "
            f"SELECT * FROM ({older.sql}) AS older WHERE (SELECT count(*) FROM recent) < "
            f"{int(limit)}"
        )
        found = _joined[key] = Precompiled(sql, (*first.params, *older.params), first.columns)
    return found


# A tier's newest ``scan_limit`` matches (of any audience), read once: the bounded search
# filters them, and their count says whether the scan stopped short of the end.
_PG_SCANNED = f"SELECT * FROM {_PG_MATCH_ROWS}"
_PG_FROM_SCANNED = '"campaigns_turn"."id" = ANY(ARRAY(SELECT id FROM scanned))'


def _tier(slots, viewer, columns, limit, rounds, n):
    """The newest ``limit`` readable turns among the newest ``n`` matches in the rounds
    (``n`` None: among the matches the statement's ``scanned`` CTE read), read by primary
    key (a search for columns the matches do not carry)."""
    if n is None:
        condition = RawSQL(_PG_FROM_SCANNED, [], BooleanField())
    else:
        round_from, round_to = (
            slots.int(bound) if isinstance(bound, str) else bound for bound in rounds
        )
        matches = [slots.int("experiment"), slots.str("query"), round_from, round_to, n]
        condition = RawSQL(_PG_MATCHES, matches, BooleanField())
    return _newest_readable(slots, viewer, columns, limit, condition)


def _newest_readable(slots, viewer, columns, limit, condition=None):
    matching = selectors.turns_visible_to(
        experiment=slots.int("experiment"), viewer=slot_viewer(slots, viewer)
    )
    if condition is not None:
        matching = matching.filter(condition)
    return matching.order_by("-seq").values_list(*columns)[:limit]


def _over_matches(compiled: Precompiled, source: str, params: tuple) -> Precompiled:
    """``compiled`` (the selector's newest readable turns) run over the rows of ``source``
    (the matches, under the table's own name) instead of the table; ``params`` are
    ``source``'s own."""
    head, found, tail = compiled.sql.partition(TURN_TABLE_FROM)
    if not found or "%s" in head or TURN_TABLE_FROM in tail:  # pragma: no cover - shape guard
        raise ValueError("Unexpected SQL shape for reading the matches' rows.")
    sql = f'{head} FROM {source} AS "campaigns_turn" WHERE {tail}'
    return Precompiled(sql, (*params, *compiled.params), compiled.columns)


def _tiers(key, viewer, columns, limit: int, rounds: tuple):
    """The bounded and the unbounded tier's statements (see `_exact`), and the params of
    the function call that reads the matches."""
    match_params = (
        ("experiment", None),
        ("query", None),
        *((bound, None) if isinstance(bound, str) else (None, bound) for bound in rounds),
    )
    if set(columns) <= set(MATCH_ROW_COLUMNS):
        # The matches' own rows: the visibility rule applies to them, no second read.
        base = compile_once(
            ("readable", *key), lambda slots: _newest_readable(slots, viewer, columns, limit)
        )
        bounded = _over_matches(base, "scanned", ())
        unbounded = _over_matches(base, _PG_MATCH_ROWS, (*match_params, ("cap", None)))
        return bounded, unbounded, match_params
    bounded = compile_once(
        ("bounded", *key), lambda slots: _tier(slots, viewer, columns, limit, rounds, None)
    )
    unbounded = compile_once(
        ("unbounded", *key),
        lambda slots: _tier(slots, viewer, columns, limit, rounds, slots.int("cap")),
    )
    return bounded, unbounded, match_params


def _exact(key, viewer, columns, limit: int, rounds: tuple) -> Precompiled:
    """The newest ``limit`` readable matches in ``rounds`` (each bound a literal or a slot
    name): first among the newest ``scan_limit`` matches, and among all of them only when
    those held fewer than ``limit`` readable turns *and* the scan stopped at
    ``scan_limit`` (it did not reach the oldest match). Visibility is applied before any
    limit that could drop a readable match. (Hidden matches — 510 GM notes using a word —
    must not push a player's own turn out of the newest ``scan_limit``.) Exactly one
    branch gives rows, the same rows either way; the unbounded one runs only when the
    bounded scan was cut short, so a word with fewer matches than ``scan_limit`` is
    scanned once."""
    found = _joined.get(("exact", *key))
    if found is None:
        bounded, unbounded, match_params = _tiers(key, viewer, columns, limit, rounds)
        short = (
            f"(SELECT count(*) FROM bounded_hits) < {int(limit)} "
            "AND (SELECT count(*) FROM scanned) >= %s"
        )
        sql = (
            f"WITH scanned AS MATERIALIZED ({_PG_SCANNED}), "
            f"bounded_hits AS MATERIALIZED ({bounded.sql}) SELECT * FROM bounded_hits "
            f"WHERE NOT ({short}) UNION ALL SELECT * FROM ({unbounded.sql}) AS all_hits "
            f"WHERE {short}"
        )
        found = _joined[("exact", *key)] = Precompiled(
            sql,
            (
                *match_params,
                ("scan_limit", None),
                *bounded.params,
                ("scan_limit", None),
                *unbounded.params,
                ("scan_limit", None),
            ),
            bounded.columns,
        )
    return found


# --- ranked retrieval's postings ---------------------------------------------------------

# Every query word's newest matches (any audience) from one call of `babel_turn_postings`
# (migration 0034): one statement planned with its values, where one function call per
# word cost more than the matches themselves. ``word`` is the word's 1-based position.
_PG_POSTINGS = "babel_turn_postings(%s, %s::text[], %s)"
# The words the bounded scan cut short, in their positions (null for the others): only
# these are searched again without the scan limit.
_PG_SHORT_QUERIES = (
    "ARRAY(SELECT CASE WHEN o.i IN (SELECT word FROM short) THEN o.q END "
    "FROM unnest(%s::text[]) WITH ORDINALITY AS o(q, i) ORDER BY o.i)"
)


def postings(viewer, columns: tuple[str, ...], limit: int) -> Precompiled:
    """Per word, its newest ``limit`` readable matches: rows ``(word, *columns)``, by word
    (0-based, the order of the ``queries`` value), each word's newest first.

    The same rule as `_exact`, for every word in one statement: a word's readable turns
    among its newest ``scan_limit`` matches, or — only for the words whose scan stopped at
    ``scan_limit`` with fewer than ``limit`` readable among them — among all its matches.
    Visibility is the selector's rule, applied to the function's rows before any limit
    that could drop a readable match. One statement whatever the number of words: it is
    prepared once per kind of viewer. Values: ``experiment``, ``queries`` (the words),
    ``scan_limit``, ``cap`` and the viewer's (`slot_values`)."""
    key = ("postings", viewer.omniscient, viewer.is_dm, columns, limit)
    found = _joined.get(key)
    if found is not None:
        return found
    if not set(columns) <= set(MATCH_ROW_COLUMNS):  # pragma: no cover - the postings' own
        raise ValueError(f"Postings read only the matches' own columns, not {columns}.")

    def build(slots):
        readable = selectors.turns_visible_to(
            experiment=slots.int("experiment"), viewer=slot_viewer(slots, viewer)
        )
        word = RawSQL('"campaigns_turn"."word"', [], IntegerField())
        return readable.order_by().annotate(word=word).values_list("word", *columns)

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
