"""Build one role's prompt pack from the database (SPEC §5).

The engine says what it needs (`history_needs`); this module loads exactly that with a
fixed number of queries whatever the history length — the recent rounds, hinge anchors
within their TTL, the role's own last monologues, ranked retrieval candidates, the
newest digest and strategic summary the role may read, lore, state, the last cut — and
hands frozen dataclasses to `build_pack`. Token counts come from the cached column.

Every query is precompiled (`campaigns.reads.precompiled`): built by the ORM once per shape,
then only bound and executed, rows read as tuples of the columns the engine uses. The
visibility-filtered ones live in `campaigns.reads.packs`, built from the selectors'
own rules. Queries for the default (`layered`) strategy: experiment + world state +
newest seq (1), participants (1), last command events (1), window + hinge anchors (1),
own monologues (1), lore (1), digest + strategic summary (1), pins (1), the postings
cache's stamp (1), then ranked retrieval (`_ranked_retrieval`: the postings that
`campaigns.reads.postings_cache` does not hold — none when no turn was appended since —
then the hits with their neighbours, but those the window's rows hold — the two best
hits, whose exchanges may be wider, in a statement of their own: 0 to 3) — at most
twelve statements at 100 turns or 50,000; on PostgreSQL `precompiled.run_all` sends
the first nine in two round trips (experiment/participants/events, then the rest), and
in one when the role's last pack read the same, with the new matches of the last
query's held words (`campaigns.services.context_ahead`); the retrieval statements
are prepared too.
`full_history` loads everything it is asked to.

`pack_for_role` answers from `campaigns.services.pack_cache` when nothing a pack reads
has changed since the same pack was built.
"""

from __future__ import annotations

from dataclasses import replace
from operator import itemgetter
from typing import TYPE_CHECKING

from django.db.models import Exists, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce

from campaigns.models import ContextEvent, Experiment, Participant, SearchBacklog, Turn
from campaigns.reads import (
    adapters,
    hit_cache,
    packs,
    postings_cache,
    search,
    selectors,
    window_cache,
)
from campaigns.reads.precompiled import Query, compile_once, json_value, run_all
from campaigns.reads.selectors import Viewer
from campaigns.services import context_ahead
from campaigns.services.memory.retrieval import pinned_from_rows
from context_engine.commands import history_needs
from context_engine.pack import build_pack
from context_engine.retrieval import NEIGHBOURS_FIRST, query_for, ranked_hits
from context_engine.types import STORY_ORDER, ModelWindow, Pack, PackInput, ParticipantView

if TYPE_CHECKING:
    import numpy as np

MAX_INPUT_CHARS = 20_000
EVENTS_LOADED = 5
PARTICIPANT_COLUMNS = ("role", "kind", "model", "bio", "identity", "secret", "reveal_round")


def pack_for_role(
    *,
    experiment: Experiment | int,
    role: str,
    input_text: str = "",
    use_cache: bool = True,
    window: ModelWindow | None = None,
) -> Pack:
    """The pack ``role`` would receive now. Raises `selectors.UnknownRole`.

    ``window``: the role's model window (`campaigns.services.windows.model_window`); the
    total budget is capped to fit it and ``Pack.cap`` says why. None: the campaign's.
    Served from the pack cache when an identical pack is current (``use_cache=False``
    always builds: benchmarks, the cache's own tests).
    """
    from campaigns.services import pack_cache

    experiment_id = experiment if isinstance(experiment, int) else experiment.pk
    input_text = input_text[:MAX_INPUT_CHARS]

    def pack_input() -> PackInput:
        inp = pack_input_for_role(experiment=experiment_id, role=role, input_text=input_text)
        return replace(inp, window=window) if window is not None else inp

    if not use_cache:
        return build_pack(pack_input())
    # Keyed by the input itself (what the role reads, and the model window): see pack_cache.
    return pack_cache.get_or_build(
        experiment_id=experiment_id, pack_input=pack_input(), build=build_pack
    )


def _as_read_by(participant: ParticipantView, viewer: Viewer, round_now: int) -> ParticipantView:
    """Another participant as ``viewer`` may read them: no identity, and a secret (with
    its reveal round) only once it is revealed. The engine would not show them anyway,
    but the pack cache is keyed by the input: it must hold only what the role reads."""
    if participant.role == viewer.role:
        return participant
    secret_shown = participant.reveal_round is not None and round_now > participant.reveal_round
    return replace(
        participant,
        identity="",
        secret=participant.secret if secret_shown else "",
        reveal_round=participant.reveal_round if secret_shown else None,
    )


def pack_input_for_role(
    *, experiment: Experiment | int, role: str, input_text: str = ""
) -> PackInput:
    experiment_id = experiment if isinstance(experiment, int) else experiment.pk
    first = [
        _experiment_query(experiment_id),
        _participants_query(experiment_id),
        _events_query(experiment_id),
    ]
    # Round trip 1: the experiment, its participants, its last command events — and on
    # PostgreSQL, sent with them, round trip 2 as the role's last pack made it
    # (`context_ahead.ahead`).
    ahead_key, ahead, held = context_ahead.ahead(experiment_id, role)
    rows = run_all(
        [
            *first,
            *(ahead.queries if ahead is not None else ()),
            *((held.query,) if held is not None else ()),
        ]
    )
    found, participant_rows, event_rows = rows[:3]
    if not found:
        raise Experiment.DoesNotExist(f"No experiment {experiment_id}.")
    hook, rules, config_raw, current_round, flags, state_fields, state_round, state_id = found[0][
        :8
    ]
    backlog = bool(found[0][8])  # an import's turns wait for their term rows
    last_seq, created_at = found[0][9:11]
    participants = [ParticipantView(*row) for row in participant_rows]
    participant = next((p for p in participants if p.role == role), None)
    if participant is None:
        raise selectors.UnknownRole(role)
    viewer = Viewer(
        role=participant.role,
        omniscient=participant.kind == Participant.Kind.JUDGE,
        is_dm=participant.kind == Participant.Kind.DM,
    )
    dm_roles = tuple(sorted(p.role for p in participants if p.kind == Participant.Kind.DM))
    dm_roles = dm_roles or ("DM",)
    if not viewer.omniscient:
        participants = [_as_read_by(p, viewer, current_round) for p in participants]
    config = adapters.pack_config_from(json_value(config_raw))
    events = tuple(adapters.event_view_row(row) for row in reversed(event_rows))
    needs = history_needs(config, current_round, events)
    input_text = input_text[:MAX_INPUT_CHARS]

    # Round trip 2 (PostgreSQL; one statement each on SQLite): everything else — unless
    # it was sent ahead (`context_ahead.ahead`) from the inputs this pack has, or as the
    # statements this pack makes (a new round moves the window's bounds, not its appended
    # read).
    inputs = context_ahead.SecondInputs(
        experiment_id, role, viewer, needs, backlog, created_at, last_seq
    )
    sent = rows[3 : 3 + len(ahead.queries)] if ahead is not None else []
    if ahead is not None and replace(ahead.inputs, last_seq=last_seq) == inputs:
        second, second_rows = ahead, sent
    else:
        second = context_ahead.second_reads(inputs)
        # `Query` compares as a dataclass: the same compiled statement (it has no __eq__:
        # by identity), values and row handling.
        if ahead is not None and ahead.queries == second.queries:
            second_rows = sent
        else:
            second_rows, held = run_all(second.queries), None  # what was sent reads otherwise
    window_read = second.window_read
    changes, window, monologues, stubs, pins, lore, summaries = second_rows
    stamp = None
    if not backlog:
        stamp = postings_cache.Stamp(
            experiment_id=experiment_id,
            created_at=created_at,
            viewer=viewer,
            changes=changes[0][0] if changes else 0,
            last_seq=last_seq,
        )
    window = window_cache.finish(window_read, window, stamp)
    held_by_window = _window_for_hits(window, viewer, needs, stamp)
    if monologues:
        seen = {row[0] for row in window}
        window = window + [row for row in monologues if row[0] not in seen]
    views = adapters.turn_view_row.many(window, dm_roles)
    views.extend(adapters.stub_view_row(row, dm_roles) for row in stubs)
    loaded = [view for view in views if view.content]
    query = query_for(input_text, loaded, participants)
    if ahead_key is not None:
        context_ahead.remember(ahead_key, inputs, tuple(query.words))
    hits, around = _ranked_retrieval(
        experiment_id,
        viewer,
        needs,
        query,
        dm_roles,
        backlog=backlog,
        stamp=stamp,
        window=held_by_window,
        held=held.postings(rows[-1]) if held is not None and stamp is not None else None,
    )

    # Results of the role's own /search, /lore, /timeline since its last turn (SPEC §5.8).
    pinned_turns, pinned_lore = pinned_from_rows(pins, experiment_id=experiment_id, viewer=viewer)
    pinned = (
        *(adapters.lore_view(entry, dm_roles) for entry in pinned_lore),
        *adapters.turn_views(pinned_turns, dm_roles),
    )

    digest = next((row for row in summaries if row[0] == "digest"), None)
    strategic = next((row for row in summaries if row[0] == "strategic"), None)
    return PackInput(
        role=role,
        participants=tuple(participants),
        turns=tuple(sorted(views, key=STORY_ORDER)),
        config=config,
        hook=hook,
        rules=rules,
        current_round=current_round,
        input_text=input_text,
        lore=tuple(adapters.lore_view_row(row, dm_roles) for row in lore),
        digest=adapters.digest_view_row(digest, dm_roles),
        strategic_summary=adapters.digest_view_row(strategic, dm_roles),
        world_state=(
            adapters.world_state_view_from(json_value(flags), json_value(state_fields), state_round)
            if state_id is not None
            else adapters.WorldStateView()
        ),
        retrieval_turns=hits,
        retrieval_context=around,
        events=events,
        pinned_retrieval=pinned,
    )


def _experiment_query(experiment_id: int) -> Query:
    """Hook, rules, config, the campaign clock and the world state, and whether the
    experiment has a `SearchBacklog` row (which picks the postings' statement,
    `search.postings_query`), in one query."""

    def build(slots):
        experiments = Experiment.objects.filter(pk=slots.int("experiment")).order_by()
        backlog = Exists(SearchBacklog.objects.filter(experiment=OuterRef("pk")))
        newest = Turn.objects.filter(experiment=OuterRef("pk")).order_by("-seq").values("seq")
        return experiments.annotate(
            backlog=backlog, last_seq=Coalesce(Subquery(newest[:1]), Value(0))
        ).values_list(
            "hook",
            "rules",
            "config",
            "current_round",
            "world_state__flags",
            "world_state__fields",
            "world_state__last_updated_round",
            "world_state__id",
            "backlog",
            "last_seq",
            "created_at",
        )

    return Query(compile_once(("pack-experiment",), build), {"experiment": experiment_id})


def _participants_query(experiment_id: int) -> Query:
    compiled = compile_once(
        ("pack-participants",),
        lambda slots: (
            Participant.objects.filter(experiment_id=slots.int("experiment"))
            .order_by("order", "id")
            .values_list(*PARTICIPANT_COLUMNS)
        ),
    )
    return Query(compiled, {"experiment": experiment_id})


def _events_query(experiment_id: int) -> Query:
    compiled = compile_once(
        ("pack-events", EVENTS_LOADED),
        lambda slots: (
            ContextEvent.objects.filter(experiment_id=slots.int("experiment"))
            .order_by("-id")
            .values_list("command", "round", "seq", "cleared_without_checkpoint")[:EVENTS_LOADED]
        ),
    )
    return Query(compiled, {"experiment": experiment_id})


def _window_for_hits(window: list[tuple], viewer: Viewer, needs, stamp) -> hit_cache.Window | None:
    """The window's rows as `hit_cache.window_hit_rows` may serve hits from: with the hit
    cache (a stamp), for a reader who is not a judge (a judge's neighbours may be
    monologues), when the window holds every readable turn past a known seq — its
    last-N transcript part's bound, or everything for ``full_history``."""
    if stamp is None or viewer.omniscient:
        return None
    if needs.full:
        return hit_cache.Window(window, 0, None)
    if not needs.last_turns:
        return None
    complete_from = window_cache.transcript_from(window, needs.last_turns)
    return hit_cache.Window(window, complete_from, needs.from_round)


def _ranked_retrieval(
    experiment_id: int,
    viewer: Viewer,
    needs,
    query,
    dm_roles,
    *,
    backlog=None,
    stamp: postings_cache.Stamp | None = None,
    window: hit_cache.Window | None = None,
    held: dict[str, tuple[int, list]] | None = None,
):
    """The retrieval hits, best first, and their neighbours (SPEC §5.8): the postings of
    the query's words from the turns' term rows (one statement; with a ``stamp``, only
    what `postings_cache` does not hold, often nothing), ranked by the engine
    (`retrieval.ranked_hits`, as the Arena's replay ranks; with a ``stamp``, a ranking
    already made under it is taken as it is), then the hits' rows with
    their neighbours' rows (one statement; with a ``stamp``, only the hits `hit_cache`
    does not hold)."""
    if not needs.retrieval_candidates or not query:
        return (), ()
    words = query.words

    def read(wanted: list[str], since: list[int] | None = None) -> dict:
        found: dict[str, np.ndarray] = {}
        if held is not None and since is not None:
            found, wanted, since = context_ahead.covered_by_held(held, wanted, since)
            if not wanted:
                return found
        query_rows = search.postings_query(
            experiment_id=experiment_id, viewer=viewer, words=wanted, backlog=backlog, since=since
        )
        found.update(search.postings_by_word(wanted, query_rows.rows() if query_rows else []))
        return found

    # Every readable turn ranks, the role's own monologues too (the selectors give a
    # player its own and no other's): an agent's older plans are found when asked for.
    limit = needs.retrieval_candidates
    if stamp is None:
        ids = ranked_hits(query, read(words), limit)
    else:
        ids = postings_cache.ranked(
            stamp, query, limit, read, lambda postings: ranked_hits(query, postings, limit)
        )
    if not ids:
        return (), ()

    def hits_with(group: list[int], neighbours: int) -> tuple[list[tuple], list[tuple]]:
        def read_hits(wanted: list[int]) -> list[tuple]:
            served, rest = [], wanted
            if window is not None:  # recent hits from the window's own rows
                served, rest = hit_cache.window_hit_rows(window, wanted, neighbours)
            if not rest:
                return served
            return (
                served
                + search.hit_query(
                    experiment_id=experiment_id,
                    viewer=viewer,
                    hit_ids=rest,
                    neighbours=neighbours,
                ).rows()
            )

        if stamp is None:
            return hit_cache.split(read_hits(group), group)
        return hit_cache.hit_rows(stamp, group, neighbours, read_hits)

    # The best hits may bring a wider exchange (`retrieval.Preset.neighbours_of`): their
    # rows are read with more neighbours, the others' with fewer (8 rows more a pack,
    # not 6 a hit).
    narrow = needs.retrieval_neighbours
    wide = max(needs.retrieval_first_neighbours, narrow)
    if wide == narrow:
        hit_rows, near = hits_with(ids, narrow)
    else:
        hit_rows, near = hits_with(ids[:NEIGHBOURS_FIRST], wide)
        more_hits, more_near = hits_with(ids[NEIGHBOURS_FIRST:], narrow)
        hit_rows += more_hits
        hit_ids = {row[0] for row in hit_rows}
        near = list({row[0]: row for row in (*near, *more_near) if row[0] not in hit_ids}.values())
    near.sort(key=_SEQ)
    views = adapters.turn_view_row.many
    return tuple(views(hit_rows, dm_roles)), tuple(views(near, dm_roles))


_SEQ = itemgetter(packs.TURN_SEQ)
