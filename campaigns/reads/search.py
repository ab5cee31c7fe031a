"""Full-text search and ranked retrieval (SPEC §5.8), as precompiled SQL.

Beside the pack loader's other reads (`campaigns.reads.packs`) and built the same way,
from the selectors' rules: a query's postings for the engine's BM25 ranking, each word's
newest readable matches on the database's own engine (`postings_query`; PostgreSQL's
statement is in `campaigns.reads.search_postgres`), the hits with their neighbours
(`hit_query`), and `/search` itself (`search_turns`), which ranks like a pack's
retrieval.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby
from operator import itemgetter

from django.db import connection
from django.db.models import BooleanField, OuterRef, Subquery
from django.db.models.expressions import RawSQL

from campaigns.models import Experiment, SearchBacklog, Turn
from campaigns.reads import search_postgres, selectors
from campaigns.reads.packs import (
    TURN_COLUMNS,
    TURN_TABLE_FROM,
    slot_values,
    slot_viewer,
    statement_shape,
)
from campaigns.reads.precompiled import Precompiled, Query, compile_once
from campaigns.reads.selectors import Viewer

# --- full-text retrieval -----------------------------------------------------------------

# SQLite: FTS5 rows are keyed by the negated turn id (migration 0008), so ascending rowid
# order is newest first and FTS5 walks its doclists lazily: with the join below and a
# LIMIT, the walk stops at the Nth readable hit instead of reading every match of the
# experiment. CROSS JOIN pins the join order (the FTS table drives).
#
# Each walk is bounded to the experiment's id span (`IdSpan`: FTS5 seeks to a rowid range).
# Inside it, ``xexpN AND "word"`` makes FTS5 step through the experiment's own token,
# which every one of its turns carries: at 50,000 turns that costs 4-5x walking the
# word alone. So where the experiment's turns fill most of the span (`IdSpan.dense`: one
# campaign at a time, or a few interleaved) the walk is the word's doclist alone, and
# the join's experiment filter (the selector's, as ever) drops other campaigns' turns;
# where the span is mostly other campaigns' turns, the walk keeps the experiment token.
# Both give exactly the same rows: the newest ``limit`` readable matches.
_SQLITE_JOIN = (
    ' FROM "campaigns_turn_fts" CROSS JOIN "campaigns_turn"'
    ' ON "campaigns_turn"."id" = -"campaigns_turn_fts"."rowid"'
    ' WHERE "campaigns_turn_fts" MATCH %s'
    ' AND "campaigns_turn_fts"."rowid" BETWEEN %s AND %s AND '
)
_ROWID_MIN, _ROWID_MAX = -(2**63), 2**63 - 1


@dataclass(frozen=True)
class IdSpan:
    """An experiment's lowest and highest turn id and seq (`span_columns` reads them)."""

    min_id: int
    max_id: int
    min_seq: int
    max_seq: int

    @property
    def dense(self) -> bool:
        """The experiment's turns are at least half of the ids in its span (seq numbers
        estimate how many it has: the choice of walk only, never which rows match)."""
        return 2 * (self.max_seq - self.min_seq + 1) >= self.max_id - self.min_id + 1

    @classmethod
    def from_row(cls, values) -> IdSpan | None:
        return cls(*values) if None not in values else None


def id_span(experiment_id: int) -> IdSpan | None:
    """The experiment's `IdSpan` on its own (the pack loader reads it with the
    experiment: `span_columns`); None when it has no turns."""
    row = (
        Experiment.objects.filter(pk=experiment_id)
        .annotate(**span_columns(OuterRef("pk")))
        .values_list("span_min_id", "span_max_id", "span_min_seq", "span_max_seq")
        .first()
    )
    return IdSpan.from_row(row) if row is not None else None


def span_columns(experiment_ref) -> dict:
    """Annotations giving an experiment's `IdSpan` (``experiment_ref``: its id, an
    ``OuterRef`` in a query of experiments): four index probes (``turn_exp_id`` and
    ``turn_unique_seq``), whatever the history's length."""
    turns = Turn.objects.filter(experiment_id=experiment_ref)
    return {
        f"span_{name}": Subquery(turns.order_by(order).values(field)[:1])
        for name, field, order in (
            ("min_id", "id", "id"),
            ("max_id", "id", "-id"),
            ("min_seq", "seq", "seq"),
            ("max_seq", "seq", "-seq"),
        )
    }


def _word_query(
    *, experiment_id: int, viewer: Viewer, word: str, limit: int, span: IdSpan | None
) -> Query:
    """SQLite: the newest ``limit`` readable turns containing ``word`` (already safe:
    `ranking.surface_words`) as `POSTING_COLUMNS`, newest first. ``span``: the
    experiment's `IdSpan`, read with the caller's other reads; without it the walk is
    unbounded and keeps the experiment token."""
    key = ("search", statement_shape(viewer), limit)
    compiled = _sqlite_search(key, viewer, limit)
    quoted = f'"{word}"'
    match = quoted if span is not None and span.dense else f"xexp{experiment_id} AND {quoted}"
    values = {
        "match": match,
        "rowid_from": -span.max_id if span is not None else _ROWID_MIN,
        "rowid_to": -span.min_id if span is not None else _ROWID_MAX,
    }
    return Query(compiled, slot_values(viewer, experiment=experiment_id, **values))


def _sqlite_search(key, viewer, limit) -> Precompiled:
    def build(slots):
        matching = selectors.turns_visible_to(
            experiment=slots.int("experiment"), viewer=slot_viewer(slots, viewer)
        )
        return matching.order_by().values_list(*POSTING_COLUMNS)

    base = compile_once(("base", *key), build)
    if base.sql.count(TURN_TABLE_FROM) != 1:  # pragma: no cover - guards the rewrite below
        raise ValueError("Unexpected SQL shape for the FTS join.")
    found = _joined.get(key)
    if found is None:
        sql = base.sql.replace(TURN_TABLE_FROM, _SQLITE_JOIN)
        sql += f' ORDER BY "campaigns_turn_fts"."rowid" LIMIT {int(limit)}'
        found = _joined[key] = Precompiled(
            sql, (("match", None), ("rowid_from", None), ("rowid_to", None), *base.params)
        )
    return found


_joined: dict[tuple, Precompiled] = {}


# --- ranked retrieval (SPEC §5.8) ------------------------------------------------------


def postings_query(
    *,
    experiment_id: int,
    viewer: Viewer,
    words: list[str],
    span: IdSpan | None = None,
    backlog: bool | None = None,
) -> Query | None:
    """Per word, the newest `ranking.DF_CAP` readable turns that contain it, in one
    statement: rows ``(word index, id, seq, tokens, round)``, by word, each word's newest
    first (`postings_by_word` makes them the postings `retrieval.ranked_hits` ranks by).
    Visibility is applied before the cap. SQLite: one selector-built FTS5 search per word
    (`_word_query`; ``span`` as there); PostgreSQL: every word's term rows in one
    statement (`search_postgres.postings`), or, while the experiment has a
    `SearchBacklog` row (``backlog``; read here when None), its full-text search
    (`search_postgres.backlog_postings`): the same rows."""
    from context_engine.ranking import DF_CAP

    if not words:
        return None
    if connection.vendor == "postgresql":
        if backlog is None:
            backlog = SearchBacklog.objects.filter(experiment_id=experiment_id).exists()
        if not backlog:
            compiled = search_postgres.postings(viewer, POSTING_COLUMNS, DF_CAP)
            return Query(
                compiled, slot_values(viewer, experiment=experiment_id, queries=list(words))
            )
        compiled = search_postgres.backlog_postings(viewer, POSTING_COLUMNS, DF_CAP)
        values = slot_values(
            viewer,
            experiment=experiment_id,
            queries=list(words),
            scan_limit=selectors.SEARCH_SCAN_LIMIT,
        )
        return Query(compiled, values)
    parts = [
        _word_query(experiment_id=experiment_id, viewer=viewer, word=word, limit=DF_CAP, span=span)
        for word in words
    ]
    key = ("postings", connection.vendor, statement_shape(viewer), len(parts))
    found = _joined.get(key)
    if found is None:
        one = parts[0].compiled
        # Each word's search is its own materialised CTE: as UNION ALL branches of
        # subqueries SQLite planned them several times slower than one by one.
        sql = (
            "WITH "
            + ", ".join(f"w{i} AS MATERIALIZED ({one.sql})" for i in range(len(parts)))
            + " "
            + " UNION ALL ".join(f"SELECT {i} AS word, w{i}.* FROM w{i}" for i in range(len(parts)))
            # By word, newest first: sorted by the database, not row by row in Python.
            + " ORDER BY 1, 3 DESC"
        )
        params = [
            (f"{i}.{name}" if name is not None else None, literal)
            for i in range(len(parts))
            for name, literal in one.params
        ]
        # Prepared on PostgreSQL: planning this statement (two branches per word) cost
        # more than running it. Its generic plan is the one any values would get: the
        # matches come from `babel_turn_matches`, planned per call inside it.
        found = _joined[key] = Precompiled(sql, params, prepare=True)
    values = {
        f"{i}.{name}": value for i, part in enumerate(parts) for name, value in part.values.items()
    }
    return Query(found, values)


POSTING_COLUMNS = ("id", "seq", "tokens", "round")


def postings_by_word(
    words: list[str], rows: list[tuple], before_round: int | None = None
) -> dict[str, list[tuple[int, int, int]]]:
    """`postings_query` rows as each word's postings ``(turn id, seq, tokens)`` (the
    shape of `ranking.Posting`), newest first; only turns of rounds before
    ``before_round`` when given. Plain tuples, sliced from the rows: at 50,000 turns a
    pack reads about 1,300 of them."""
    postings: dict[str, list[tuple[int, int, int]]] = {word: [] for word in words}
    for index, group in groupby(rows, itemgetter(0)):
        if before_round is None:
            postings[words[index]] = [row[1:4] for row in group]
        else:
            postings[words[index]] = [row[1:4] for row in group if row[4] < before_round]
    return postings


def hit_query(*, experiment_id: int, viewer: Viewer, hit_ids: list[int], neighbours: int) -> Query:
    """The ranked hits' rows and their neighbours' rows, in one statement.

    Rows are ``(is_hit, *TURN_COLUMNS, before0, after0, before1, after1, …, opening)``: a
    hit (``is_hit`` 1) with the ids of its ``neighbours`` nearest readable turns on each
    side (no monologues but for judges) and of its round's first readable turn; then
    each of those turns that is not itself a hit (``is_hit`` 0, the id columns null).
    "Nearest" and "first" are decided on readable turns only, so what a viewer cannot
    read moves no neighbour; every row passes the selector's turn rule."""
    slots_count = _padded_size(len(hit_ids))
    around_names = [f"{side}{k}" for k in range(neighbours) for side in ("before", "after")]
    around_names.append("opening")

    def build_hits(slots):
        visible = selectors.turns_visible_to(
            experiment=slots.int("experiment"), viewer=slot_viewer(slots, viewer)
        ).order_by()
        if not viewer.omniscient:  # by field: MONOLOGUE_KIND's raw SQL names the outer table
            visible = visible.exclude(kind=Turn.Kind.MONOLOGUE)
        around = {}
        for k in range(neighbours):
            earlier = visible.filter(seq__lt=OuterRef("seq")).order_by("-seq")
            later = visible.filter(seq__gt=OuterRef("seq")).order_by("seq")
            around[f"before{k}"] = Subquery(earlier.values("id")[k : k + 1])
            around[f"after{k}"] = Subquery(later.values("id")[k : k + 1])
        # The round's first readable turn: when it states a date, it dates the hit.
        # Ordered as the (experiment, round, seq) index: by seq alone, SQLite walked the
        # experiment's turns from the first until the round matched.
        opening = visible.filter(round=OuterRef("round")).order_by("round", "seq")
        around["opening"] = Subquery(opening.values("id")[:1])
        ids = [slots.int(f"hit{i}") for i in range(slots_count)]
        # The hits by primary key with the selector's turn rule: they come from this
        # experiment's postings, and with the experiment's own filter SQLite walked the
        # experiment's index instead of looking the ids up.
        rule = selectors._turn_rule(slot_viewer(slots, viewer))
        return (
            Turn.objects.filter(id__in=ids)
            .filter(rule)
            .annotate(**around)
            .values_list(*TURN_COLUMNS, *around_names)
        )

    def build_near(slots):
        # The neighbours the hits named, by primary key with the selector's turn rule.
        named = " UNION ".join(f"SELECT {name} FROM hits" for name in around_names)
        rule = selectors._turn_rule(slot_viewer(slots, viewer))
        if connection.vendor == "postgresql":
            # As an array, the ids are a list of primary keys to look up: as an IN
            # subquery a generic plan could hash-join them with a scan of every turn
            # (chosen on a table of a few thousand turns, then kept as it grew).
            listed = RawSQL(f'"campaigns_turn"."id" = ANY(ARRAY({named}))', [], BooleanField())
            hit = RawSQL(
                '"campaigns_turn"."id" = ANY(ARRAY(SELECT id FROM hits))', [], BooleanField()
            )
            return Turn.objects.filter(listed).exclude(hit).filter(rule).values_list(*TURN_COLUMNS)
        return (
            Turn.objects.filter(id__in=RawSQL(named, []))
            .exclude(id__in=RawSQL("SELECT id FROM hits", []))
            .filter(rule)
            .values_list(*TURN_COLUMNS)
        )

    key = ("hits", statement_shape(viewer), slots_count, neighbours)
    compiled = _joined.get(key)
    if compiled is None:
        hits = compile_once(("hit-rows", *key[1:]), build_hits)
        near = compile_once(("hit-neighbours", *key[1:]), build_near)
        padding = ", ".join("NULL" for _ in around_names)
        sql = (
            f"WITH hits AS MATERIALIZED ({hits.sql}) SELECT 1 AS is_hit, hits.* FROM hits "
            f"UNION ALL SELECT 0, near.*, {padding} FROM ({near.sql}) AS near"
        )
        compiled = _joined[key] = Precompiled(sql, (*hits.params, *near.params), prepare=True)
    padded = [*hit_ids, *([0] * (slots_count - len(hit_ids)))]
    values = {f"hit{i}": hit_id for i, hit_id in enumerate(padded)}
    return Query(compiled, slot_values(viewer, experiment=experiment_id, **values))


def _padded_size(count: int) -> int:
    """Id lists are padded (with 0, no turn's id) to a power of two: few statement shapes."""
    return max(8, 1 << (max(count, 1) - 1).bit_length())


def search_turns(
    *,
    experiment: Experiment | int,
    viewer: Viewer,
    text: str,
    before_round: int | None = None,
    limit: int = 10,
) -> list[Turn]:
    """Turns this viewer may read that match ``text``, best first (``/search``).

    The same ranking as a pack's retrieval (SPEC §5.8): BM25 over the viewer's readable
    turns (`context_engine.ranking`), from the postings of the database's own full-text
    engine (`postings_query`: PostgreSQL tsvector + GIN, SQLite FTS5), audience-filtered
    before anything is counted. Ties go to the newer turn.
    """
    from context_engine.ranking import make_query
    from context_engine.retrieval import ranked_hits

    experiment_id = experiment if isinstance(experiment, int) else experiment.pk
    query = make_query(text)
    found_rows = postings_query(experiment_id=experiment_id, viewer=viewer, words=query.words)
    rows = found_rows.rows() if found_rows else []
    ids = ranked_hits(query, postings_by_word(query.words, rows, before_round), limit)
    found = Turn.objects.in_bulk(ids)
    return [found[turn_id] for turn_id in ids if turn_id in found]
