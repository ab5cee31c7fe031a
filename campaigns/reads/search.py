"""Full-text search and ranked retrieval (SPEC §5.8), as precompiled SQL.

Beside the pack loader's other reads (`campaigns.reads.packs`) and built the same way,
from the selectors' rules: a query's postings for the engine's BM25 ranking, each word's
newest readable matches from the turns' term rows (`postings_query`; each database's
statements are in `campaigns.reads.search_postgres` and `search_sqlite`), the hits with
their neighbours (`hit_query`), and `/search` itself (`search_turns`), which ranks like a
pack's retrieval.
"""

from __future__ import annotations

from itertools import pairwise
from operator import itemgetter

import numpy as np
from django.db import connection
from django.db.models import BooleanField, OuterRef, Subquery
from django.db.models.expressions import RawSQL

from campaigns.models import Experiment, SearchBacklog, Turn
from campaigns.reads import search_postgres, search_sqlite, selectors
from campaigns.reads.packs import TURN_COLUMNS, slot_values, slot_viewer, statement_shape
from campaigns.reads.precompiled import Precompiled, Query, compile_once
from campaigns.reads.selectors import Viewer
from context_engine.ranking import DF_CAP, NO_POSTINGS, speaker_code, stem

# --- ranked retrieval (SPEC §5.8) ------------------------------------------------------


# A seq below every turn's: "every match" as a word's ``since``.
ALL_SEQS = -(2**31)


def postings_query(
    *,
    experiment_id: int,
    viewer: Viewer,
    words: list[str],
    backlog: bool | None = None,
    since: list[int] | None = None,
    rounds: bool = False,
) -> Query | None:
    """Per word, the newest `ranking.DF_CAP` readable turns that contain it, in one
    statement: rows ``(word index, id, seq, tokens, speaker)``, by word, each word's
    newest first (`postings_by_word` makes them the postings `retrieval.ranked_hits` ranks
    by); with ``rounds``, each row's round last (`search_turns` before a round).
    Visibility is applied before the cap. From each database's term rows
    (`search_postgres.postings`, `search_sqlite.postings`), or, while the experiment has
    a `SearchBacklog` row (``backlog``; read here when None), from a search that also
    finds the turns an import left for the indexing task (their ``backlog_postings``):
    the same rows. ``since``: per word, only its matches after that seq (the postings
    cache's read of what it does not hold; all of a word's matches by default)."""
    if not words:
        return None
    since = [ALL_SEQS] * len(words) if since is None else since
    if len(since) != len(words):  # pragma: no cover - a caller's bug
        raise ValueError("One since per word.")
    if backlog is None:
        backlog = SearchBacklog.objects.filter(experiment_id=experiment_id).exists()
    if connection.vendor == "postgresql":
        statement = search_postgres.backlog_postings if backlog else search_postgres.postings
        compiled = statement(viewer, _columns(rounds), DF_CAP)
        values = slot_values(viewer, experiment=experiment_id, queries=list(words), since=since)
        return Query(compiled, values)
    statement = search_sqlite.backlog_postings if backlog else search_sqlite.postings
    compiled = statement(viewer, _columns(rounds), DF_CAP, len(words))
    values = {
        f"{i}.{name}": value
        for i, (word, after) in enumerate(zip(words, since, strict=True))
        for name, value in slot_values(
            viewer, experiment=experiment_id, term=stem(word), since=after
        ).items()
    }
    return Query(compiled, values, post=in_word_order)


# A row: (word index, *POSTING_COLUMNS[, round]); a posting is the columns, the speaker
# as its `ranking.speaker_code`.
POSTING_COLUMNS = ("id", "seq", "tokens", "speaker")
_WORD_SEQ = (0, 1 + POSTING_COLUMNS.index("seq"))
_SPEAKER = 1 + POSTING_COLUMNS.index("speaker")


def _columns(rounds: bool) -> tuple[str, ...]:
    return (*POSTING_COLUMNS, "round") if rounds else POSTING_COLUMNS


def in_word_order(rows: list[tuple]) -> list[tuple]:
    """SQLite's `postings_query` rows (its union has no ORDER BY) by word, each word's
    newest first: two stable sorts keyed in C, by seq (newest first), then by word
    (~0.05 ms for a pack's ~1,000 rows, which come in a few sorted runs; SQLite's own
    sort took ~0.2 ms in a temporary b-tree)."""
    word, seq = _WORD_SEQ
    rows.sort(key=itemgetter(seq), reverse=True)
    rows.sort(key=itemgetter(word))
    return rows


def postings_by_word(
    words: list[str], rows: list[tuple], before_round: int | None = None
) -> dict[str, np.ndarray]:
    """`postings_query` rows as each word's postings: an array of rows ``(turn id, seq,
    tokens, speaker code)`` (`ranking.as_postings`), newest first, read-only; only turns
    of rounds before ``before_round`` when given (rows read with ``rounds``). The rows
    are made one array in one pass (at 50,000 turns a pack reads about 1,300 of them),
    a column at a time (the speaker's name becomes its code), and each word's postings
    are a slice of it."""
    postings = dict.fromkeys(words, NO_POSTINGS)
    if not rows:
        return postings
    width = len(rows[0])
    table = np.empty((len(rows), width), dtype=np.int64)
    for column, values in enumerate(zip(*rows, strict=True)):
        if column == _SPEAKER:
            codes = {name: speaker_code(name) for name in set(values)}
            values = [codes[name] for name in values]
        table[:, column] = values
    if before_round is not None:
        table = table[table[:, 1 + len(POSTING_COLUMNS)] < before_round]
    table.flags.writeable = False
    word_of = table[:, 0]
    starts = [0, *(np.flatnonzero(word_of[1:] != word_of[:-1]) + 1).tolist(), len(table)]
    for start, end in pairwise(starts):
        if start < end:
            postings[words[int(word_of[start])]] = table[start:end, 1 : 1 + len(POSTING_COLUMNS)]
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


_joined: dict[tuple, Precompiled] = {}


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
    turns (`context_engine.ranking`), from the postings of the turns' term rows
    (`postings_query`), audience-filtered before anything is counted. Ties go to the
    newer turn.
    """
    from context_engine.ranking import make_query
    from context_engine.retrieval import ranked_hits

    experiment_id = experiment if isinstance(experiment, int) else experiment.pk
    query = make_query(text)
    found_rows = postings_query(
        experiment_id=experiment_id,
        viewer=viewer,
        words=query.words,
        rounds=before_round is not None,
    )
    rows = found_rows.rows() if found_rows else []
    ids = ranked_hits(query, postings_by_word(query.words, rows, before_round), limit)
    found = Turn.objects.in_bulk(ids)
    return [found[turn_id] for turn_id in ids if turn_id in found]
