"""The pack loader's visibility-filtered reads, as precompiled SQL returning tuples.

Part of `campaigns.reads.selectors`: every query here is built from the same rules
(`selectors._turn_rule`, `selectors._readable`, hence the `readable_by` lookup) and
compiled once per shape by `campaigns.reads.precompiled`, so no visibility rule is written
twice. A pack needs eight or so of these reads per call; through the ORM each cost more
to build and compile than to run. `tests/campaigns/test_packs.py` checks them
against the ORM selectors with Hypothesis.

Rows are plain tuples in the column order of the ``*_COLUMNS`` constants; JSON columns
are still text (decode with `precompiled.json_value`).
"""

from __future__ import annotations

from django.db import connection
from django.db.models import Count, Q, Subquery, Value
from django.db.models.functions import Coalesce

from campaigns.models import (
    LORE_FIELDS,
    MONOLOGUE_KIND,
    LoreEntry,
    RetrievalPin,
    Summary,
    Turn,
)
from campaigns.reads import selectors
from campaigns.reads.precompiled import (
    ROW_VERSION,
    Precompiled,
    Query,
    compile_once,
    row_version,
    without_row_version,
)
from campaigns.reads.selectors import Viewer

TURN_COLUMNS = (
    "id",
    "seq",
    "round",
    "speaker",
    "kind",
    "content",
    "visibility",
    "tags",
    "hinge",
    "tokens",
)
# Where the caches find a `TURN_COLUMNS` row's seq, round, kind and hinge flag
# (`window_cache`, `hit_cache`), and a monologue row's kind.
TURN_SEQ, TURN_ROUND, TURN_KIND, TURN_HINGE = (
    TURN_COLUMNS.index(c) for c in ("seq", "round", "kind", "hinge")
)
TURN_MONOLOGUE = str(Turn.Kind.MONOLOGUE)
# The FROM clause of a selector-built read of turns: the search rewrites it to read the
# same columns from the term rows or from a function's matches (`over_rows`).
TURN_TABLE_FROM = ' FROM "campaigns_turn" WHERE '
STUB_COLUMNS = ("id", "seq", "round", "speaker", "kind", "visibility", "hinge")
LORE_COLUMNS = ("id", *LORE_FIELDS)
SUMMARY_COLUMNS = (
    "kind",
    "audience",
    "round_from",
    "round_to",
    "text",
    "sections",
    "method",
    "version",
)


def over_rows(compiled: Precompiled, source: str, params: tuple = ()) -> Precompiled:
    """``compiled`` (a selector-built read of turns) run over the rows of ``source`` — a
    table or subquery with the turn columns the statement reads, under the turns table's
    own name — instead of the turns table; ``params`` are ``source``'s own. The rule is
    the selector's, unchanged: a column ``source`` lacks fails loudly ("no such column"),
    it never reads past the rule."""
    head, found, tail = compiled.sql.partition(TURN_TABLE_FROM)
    if not found or "%s" in head or TURN_TABLE_FROM in tail:  # pragma: no cover - shape guard
        raise ValueError("Unexpected SQL shape for reading turns from other rows.")
    sql = f'{head} FROM {source} AS "campaigns_turn" WHERE {tail}'
    return Precompiled(sql, (*params, *compiled.params), compiled.columns)


def statement_shape(viewer: Viewer) -> tuple[bool, bool]:
    return (viewer.omniscient, viewer.is_dm)


def slot_viewer(slots, viewer: Viewer) -> Viewer:
    """The same kind of viewer, its role replaced by a slot (bound at execution)."""
    if viewer.omniscient:
        return Viewer(role=None, omniscient=True, is_dm=viewer.is_dm)
    return Viewer(role=slots.str("role"), is_dm=viewer.is_dm)


def slot_values(viewer: Viewer, **values) -> dict:
    if not viewer.omniscient:
        values["role"] = viewer.role or ""
    values["cap"] = CAP
    return values


# "round >= a" and "seq >= a" are written as closed ranges up to the largest value the
# columns hold: the same rows, but a prepared statement's generic plan
# (`precompiled.run_all`) estimates a closed range on unknown values as narrow and walks
# the (experiment, round, seq) or (experiment, seq) index; an open one it plans as a
# third of the table, read in full.
CAP = 2**31 - 1


def _from_round(slots) -> Q:
    return Q(round__range=(slots.int("from_round"), slots.int("cap")))


def _from_nth_newest(slots, transcript, n: int) -> Q:
    """Turns from the Nth-newest of ``transcript`` on (all of them with fewer)."""
    nth = transcript.order_by("-seq").values("seq")[n - 1 : n]
    return Q(seq__range=(Coalesce(Subquery(nth), Value(0)), slots.int("cap")))


def window_turn_query(
    *,
    experiment_id: int,
    viewer: Viewer,
    from_round: int | None,
    hinge_from_round: int | None,
    last_turns: int,
) -> Query | None:
    """Readable turns of the recent rounds, hinge anchors and the last N transcript turns.

    A UNION of index-friendly parts (an OR would scan the whole history). "Transcript"
    leaves out monologues, which the loader fetches apart (`own_monologue_query`).
    """
    parts_key = (from_round is not None, hinge_from_round is not None, last_turns)
    if not any(parts_key):
        return None

    def build(slots):
        visible = selectors.turns_visible_to(
            experiment=slots.int("experiment"), viewer=slot_viewer(slots, viewer)
        ).order_by()
        parts = []
        if from_round is not None:
            parts.append(visible.filter(_from_round(slots)))
        if hinge_from_round is not None:
            parts.append(visible.filter(hinge=True, round__gte=slots.int("hinge_from_round")))
        if last_turns:
            transcript = visible.exclude(kind=Turn.Kind.MONOLOGUE)
            parts.append(visible.filter(_from_nth_newest(slots, transcript, last_turns)))
        parts = [part.values_list(*TURN_COLUMNS) for part in parts]
        # In seq order: a UNION's own order is whatever plan the database picked.
        union = parts[0].union(*parts[1:]) if len(parts) > 1 else parts[0]
        return union.order_by("seq")

    compiled = compile_once(("window", statement_shape(viewer), parts_key), build)
    values = slot_values(
        viewer, experiment=experiment_id, from_round=from_round, hinge_from_round=hinge_from_round
    )
    return Query(compiled, values)


def turns_after_query(*, experiment_id: int, viewer: Viewer, since: int, until: int) -> Query:
    """Readable turns after seq ``since`` up to seq ``until``, in seq order (the window
    cache's read of what was appended since it read the window, `window_cache`; bounded,
    so a read sent before the newest seq is known stays small)."""

    def build(slots):
        visible = selectors.turns_visible_to(
            experiment=slots.int("experiment"), viewer=slot_viewer(slots, viewer)
        )
        after = visible.filter(seq__range=(slots.int("since"), slots.int("until")))
        return after.order_by("seq").values_list(*TURN_COLUMNS)

    compiled = compile_once(("after", statement_shape(viewer)), build)
    # The range is closed (see above); ``since`` itself is never a new turn's seq.
    values = slot_values(viewer, experiment=experiment_id, since=since + 1, until=until)
    return Query(compiled, values)


def all_turn_query(*, experiment_id: int, viewer: Viewer) -> Query:
    """Every turn ``viewer`` may read, in seq order (``full_history`` only)."""

    def build(slots):
        return selectors.turns_visible_to(
            experiment=slots.int("experiment"), viewer=slot_viewer(slots, viewer)
        ).values_list(*TURN_COLUMNS)

    compiled = compile_once(("all", statement_shape(viewer)), build)
    return Query(compiled, slot_values(viewer, experiment=experiment_id))


def own_monologue_query(*, experiment_id: int, viewer: Viewer, speaker: str, count: int) -> Query:
    """The newest ``count`` monologues of ``speaker`` that ``viewer`` may read."""

    def build(slots):
        visible = selectors.turns_visible_to(
            experiment=slots.int("experiment"), viewer=slot_viewer(slots, viewer)
        )
        own = visible.filter(MONOLOGUE_KIND, speaker=slots.str("speaker"))
        return own.order_by("-seq").values_list(*TURN_COLUMNS)[:count]

    compiled = compile_once(("monologues", statement_shape(viewer), count), build)
    return Query(compiled, slot_values(viewer, experiment=experiment_id, speaker=speaker))


def whisper_stub_query(
    *,
    experiment_id: int,
    viewer: Viewer,
    from_round: int | None,
    last_turns: int,
    full: bool = False,
) -> Query | None:
    """Whispers ``viewer`` may NOT read, only the columns showing they happened.

    Built on `selectors.whisper_existence_for`; ``from_round``/``last_turns`` restrict it to
    the ranges the window loads; ``full`` takes the whole history (``full_history``).
    """
    if not full and from_round is None and not last_turns:
        return None
    if full:
        from_round, last_turns = None, 0

    def build(slots):
        experiment = slots.int("experiment")
        unreadable = selectors.whisper_existence_for(
            experiment=experiment, viewer=slot_viewer(slots, viewer)
        )
        if from_round is not None or last_turns:
            ranges = Q(pk__in=[])
            if from_round is not None:
                ranges |= _from_round(slots)
            if last_turns:
                transcript = selectors.turns_visible_to(
                    experiment=experiment, viewer=slot_viewer(slots, viewer)
                ).exclude(kind=Turn.Kind.MONOLOGUE)
                ranges |= _from_nth_newest(slots, transcript, last_turns)
            unreadable = unreadable.filter(ranges)
        return unreadable.order_by("seq").values_list(*STUB_COLUMNS)

    key = ("stubs", statement_shape(viewer), from_round is not None, last_turns, full)
    compiled = compile_once(key, build)
    return Query(compiled, slot_values(viewer, experiment=experiment_id, from_round=from_round))


def lore_query(*, experiment_id: int, viewer: Viewer) -> Query:
    """Lore ``viewer`` may read, rejected entries left out, by id: the engine orders lore
    by id itself (`candidates.gather`), and the glossary's order by term sorted the rows
    by a collated text on PostgreSQL (0.06 ms of the pack's second round trip)."""

    kept = connection.vendor == "postgresql"  # its rows are kept between packs (`run_all`)

    def build(slots):
        readable = selectors.lore_visible_to(
            experiment=slots.int("experiment"), viewer=slot_viewer(slots, viewer)
        ).exclude(status=LoreEntry.Status.REJECTED)
        if kept:
            readable = readable.annotate(row_version=row_version(LoreEntry._meta.db_table))
        columns = (*LORE_COLUMNS, ROW_VERSION) if kept else LORE_COLUMNS
        return readable.order_by("id").values_list(*columns)

    compiled = compile_once(("lore", statement_shape(viewer)), build)
    values = slot_values(viewer, experiment=experiment_id)
    if not kept:
        return Query(compiled, values)
    return Query(compiled, values, without_row_version, keep=("lore", experiment_id, viewer))


def newest_summary_query(*, experiment_id: int, viewer: Viewer, own_key: str) -> Query:
    """The newest digest ``viewer`` may read and the newest strategic summary of its own
    audience (``own_key``), in one query.

    Newest written wins: versions are linear and a restore writes a new version, so the
    last row written for an audience is the one in force.
    """

    def build(slots):
        readable = selectors.summaries_visible_to(
            experiment=slots.int("experiment"), viewer=slot_viewer(slots, viewer)
        )
        newest_digest = readable.filter(kind=Summary.Kind.DIGEST).order_by("-id")
        newest_strategic = readable.filter(
            kind=Summary.Kind.STRATEGIC, audience_key=slots.str("own_key")
        ).order_by("-id")
        return (
            Summary.objects.filter(
                Q(pk=Subquery(newest_digest.values("pk")[:1]))
                | Q(pk=Subquery(newest_strategic.values("pk")[:1]))
            )
            .order_by("id")
            .values_list(*SUMMARY_COLUMNS)
        )

    compiled = compile_once(("summaries", statement_shape(viewer)), build)
    return Query(compiled, slot_values(viewer, experiment=experiment_id, own_key=own_key))


def turn_change_count_query(*, experiment_id: int, viewer: Viewer) -> Query:
    """How many of the experiment's logged turn changes ``viewer`` may read: rows
    ``[(count,)]``, or none for none. The pack caches' stamp (`postings_cache`,
    `hit_cache`, `window_cache`).

    ``campaigns_turn_changes`` (migration 0039) holds each edited, deleted or
    re-visibled turn's versions with the columns the turn rule reads; the selector's
    rule is applied to them as to the turns (`over_rows`), so a change to a turn the
    viewer reads neither before nor after leaves the count as it was."""
    key = ("changes", statement_shape(viewer))
    compiled = _changes.get(key)
    if compiled is None:

        def build(slots):
            return (
                selectors.turns_visible_to(
                    experiment=slots.int("experiment"), viewer=slot_viewer(slots, viewer)
                )
                .order_by()
                .values("experiment_id")
                .annotate(changes=Count("id"))
                .values_list("changes")
            )

        compiled = _changes[key] = over_rows(
            compile_once(("changes-rule", *key[1:]), build), "campaigns_turn_changes"
        )
    return Query(compiled, slot_values(viewer, experiment=experiment_id))


_changes: dict[tuple, Precompiled] = {}


def newest_logged_seq(experiment_id: int) -> int:
    """The newest seq in the experiment's turn change log (0 for none). A deleted turn's
    seq is logged, so `turns.turn_create` never gives it to a later turn: an appended
    turn always comes past every seq the caches have seen, even after the newest turn
    was deleted (a reused seq would be a turn they could not tell from an old one)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT max(seq) FROM campaigns_turn_changes WHERE experiment_id = %s",
            [experiment_id],
        )
        return cursor.fetchone()[0] or 0


def pin_id_rows(**kwargs) -> list[tuple]:
    """See `pin_id_query`."""
    return pin_id_query(**kwargs).rows()


def pin_id_query(
    *,
    experiment_id: int,
    role: str,
    count: int,
    columns: tuple[str, ...] = ("turn_ids", "lore_ids"),
) -> Query:
    """``(turn_ids, lore_ids)`` (JSON text) of the newest ``count`` pins ``role`` made
    since its own last turn (the pins in force), plus any further ``columns`` asked for.
    Only ids: the caller re-reads them through the selectors."""

    def build(slots):
        last_own = (
            Turn.objects.filter(experiment_id=slots.int("experiment"), speaker=slots.str("role"))
            .order_by("-seq")
            .values("seq")[:1]
        )
        return (
            RetrievalPin.objects.filter(
                experiment_id=slots.int("experiment"),
                role=slots.str("role"),
                seq__gte=Coalesce(Subquery(last_own), Value(0)),
            )
            .order_by("-id")
            .values_list(*columns)[:count]
        )

    compiled = compile_once(("pins", count, columns), build)
    return Query(compiled, {"experiment": experiment_id, "role": role})
