"""Build one role's prompt pack from the database (SPEC §5).

The engine says what it needs (`history_needs`); this module loads exactly that with a
fixed number of queries whatever the history length — the recent rounds, hinge anchors
within their TTL, the role's own last monologues, full-text retrieval candidates, the
newest digest and strategic summary the role may read, lore, state, the last cut — and
hands frozen dataclasses to `build_pack`. Every read goes through `campaigns.selectors`;
token counts come from the cached column.

Queries for the default (`layered`) strategy: experiment + world state + current round
(1), participants (1), last command events (1), window + hinge anchors (1), own
monologues (1), retrieval (1, only with an input), lore (1), digest + strategic summary
(1) — eight, at 100 turns or 50,000. `full_history` loads everything it is asked to.
"""

from __future__ import annotations

from django.db.models import OuterRef, Q, Subquery, Value
from django.db.models.functions import Coalesce

from campaigns import adapters, selectors
from campaigns.models import ContextEvent, Experiment, LoreEntry, Participant, Summary, Turn
from campaigns.services.memory.retrieval import pinned_for_role
from context_engine.commands import history_needs
from context_engine.pack import build_pack
from context_engine.types import Pack, PackInput
from context_engine.visibility import audience_key

MAX_INPUT_CHARS = 20_000
TURN_COLUMNS_UNUSED = ("created_at", "needs_review")
EVENTS_LOADED = 5


def pack_for_role(*, experiment: Experiment | int, role: str, input_text: str = "") -> Pack:
    """The pack ``role`` would receive now. Raises `selectors.UnknownRole`."""
    return build_pack(pack_input_for_role(experiment=experiment, role=role, input_text=input_text))


def pack_input_for_role(
    *, experiment: Experiment | int, role: str, input_text: str = ""
) -> PackInput:
    experiment_id = experiment if isinstance(experiment, int) else experiment.pk
    experiment = _experiment_with_state(experiment_id)
    participants = list(experiment.participants.all())
    participant = next((p for p in participants if p.role == role), None)
    if participant is None:
        raise selectors.UnknownRole(role)
    viewer = selectors.viewer_for_participant(participant)
    dm_roles = tuple(sorted(p.role for p in participants if p.kind == Participant.Kind.DM))
    dm_roles = dm_roles or ("DM",)
    config = adapters.pack_config(experiment)
    current_round = experiment.newest_turn_round or 0  # lead: switch to the clock field
    events = tuple(
        adapters.event_view(event)
        for event in reversed(
            ContextEvent.objects.filter(experiment_id=experiment_id).order_by("-id")[:EVENTS_LOADED]
        )
    )
    needs = history_needs(config, current_round, events)
    # Columns a pack never reads are not fetched (timestamps cost parsing on every row).
    visible = selectors.turns_visible_to(experiment=experiment_id, viewer=viewer).defer(
        *TURN_COLUMNS_UNUSED
    )

    transcript = visible.exclude(kind=Turn.Kind.MONOLOGUE)  # own monologues ride apart
    turns = _window_turns(visible, transcript, needs)
    if needs.monologue_count and not needs.full:
        own = visible.filter(kind=Turn.Kind.MONOLOGUE, speaker=role).order_by("-seq")
        turns = _merge(turns, own[: needs.monologue_count])
    views = list(adapters.turn_views(turns, dm_roles))
    if needs.unreadable_whispers and not viewer.omniscient:
        views.extend(_whisper_stubs(experiment_id, viewer, transcript, needs, dm_roles))

    input_text = input_text[:MAX_INPUT_CHARS]
    retrieval = ()
    if needs.retrieval_candidates and input_text.strip():
        hits = selectors.search_turns(
            experiment=experiment_id,
            viewer=viewer,
            text=input_text,
            before_round=needs.from_round,
            limit=needs.retrieval_candidates,
        )
        retrieval = adapters.turn_views(hits, dm_roles)

    pinned_turns, pinned_lore = pinned_for_role(
        experiment_id=experiment_id, role=role, viewer=viewer
    )
    pinned = (
        *(adapters.lore_view(entry, dm_roles) for entry in pinned_lore),
        *adapters.turn_views(pinned_turns, dm_roles),
    )

    lore = (
        selectors.lore_visible_to(experiment=experiment_id, viewer=viewer)
        .exclude(status=LoreEntry.Status.REJECTED)
        .defer("created_at", "updated_at", "key", "audience_key")
    )
    digest, strategic = _summaries(experiment_id, viewer, role)
    return PackInput(
        role=role,
        participants=tuple(adapters.participant_view(p) for p in participants),
        turns=tuple(sorted(views, key=lambda t: (t.seq, t.id))),
        config=config,
        hook=experiment.hook,
        rules=experiment.rules,
        current_round=current_round,
        input_text=input_text,
        lore=tuple(adapters.lore_view(entry, dm_roles) for entry in lore),
        digest=adapters.digest_view(digest, dm_roles),
        strategic_summary=adapters.digest_view(strategic, dm_roles),
        world_state=adapters.world_state_view(getattr(experiment, "world_state", None)),
        retrieval_turns=retrieval,
        events=events,
        pinned_retrieval=pinned,
    )


def _experiment_with_state(experiment_id: int) -> Experiment:
    """The experiment, its world state and its current round, in one query."""
    newest_round = (
        Turn.objects.filter(experiment_id=OuterRef("pk")).order_by("-round").values("round")[:1]
    )
    return (
        Experiment.objects.select_related("world_state")
        .annotate(newest_turn_round=Subquery(newest_round))
        .get(pk=experiment_id)
    )


def _window_turns(visible, transcript, needs) -> list[Turn]:
    """Recent rounds, hinge anchors and the last N turns, in one query.

    A UNION of index-friendly parts: an OR across them would make the database scan
    the whole history instead of seeking on (experiment, round) and (experiment, seq).
    """
    if needs.full:
        return list(visible)
    visible = visible.order_by()
    parts = []
    if needs.from_round is not None:
        parts.append(visible.filter(round__gte=needs.from_round))
    if needs.hinge_from_round is not None:
        parts.append(visible.filter(hinge=True, round__gte=needs.hinge_from_round))
    if needs.last_turns:
        parts.append(visible.filter(seq__gte=_nth_newest_seq(transcript, needs.last_turns)))
    if not parts:
        return []
    query = parts[0].union(*parts[1:]) if len(parts) > 1 else parts[0]
    return list(query)


def _nth_newest_seq(transcript, n: int):
    """The seq of the Nth-newest transcript turn, as a subquery (0 with fewer than N).

    ``transcript`` leaves out the role's own monologues, which `history_needs` counts apart.
    """
    nth = transcript.order_by("-seq").values("seq")[n - 1 : n]
    return Coalesce(Subquery(nth), Value(0))


def _merge(turns: list[Turn], extra) -> list[Turn]:
    seen = {turn.pk for turn in turns}
    return turns + [turn for turn in extra if turn.pk not in seen]


def _whisper_stubs(experiment_id, viewer, transcript, needs, dm_roles):
    """Whispers the role may not read, as content-free stubs ("X whispered to Y")."""
    unreadable = selectors.whisper_existence_for(experiment=experiment_id, viewer=viewer)
    if not needs.full:
        # The same ranges the window loads, never the whole history.
        ranges = Q(pk__in=[])
        if needs.from_round is not None:
            ranges |= Q(round__gte=needs.from_round)
        if needs.last_turns:
            ranges |= Q(seq__gte=_nth_newest_seq(transcript, needs.last_turns))
        unreadable = unreadable.filter(ranges)
    return [adapters.turn_view(turn, dm_roles, redact=True) for turn in unreadable]


def _summaries(experiment_id: int, viewer, role: str) -> tuple[Summary | None, Summary | None]:
    """The newest digest and the role's own strategic summary it may read, in one query."""
    readable = selectors.summaries_visible_to(experiment=experiment_id, viewer=viewer)
    # Newest written wins: versions are linear and a restore writes a new version, so the
    # last row written for the role's current audience is the one in force.
    newest_digest = readable.filter(kind=Summary.Kind.DIGEST).order_by("-id")
    newest_strategic = readable.filter(
        kind=Summary.Kind.STRATEGIC, audience_key=audience_key((role,))
    ).order_by("-id")
    rows = list(
        Summary.objects.filter(
            Q(pk=Subquery(newest_digest.values("pk")[:1]))
            | Q(pk=Subquery(newest_strategic.values("pk")[:1]))
        ).defer("source_turn_ids", "created_at")
    )
    digest = next((s for s in rows if s.kind == Summary.Kind.DIGEST), None)
    strategic = next((s for s in rows if s.kind == Summary.Kind.STRATEGIC), None)
    return digest, strategic
