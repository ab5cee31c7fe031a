"""Visibility first: everything a role may know, decided before any window is cut.

`gather` is the single place in the engine where turns, monologues, secrets, lore,
digests and state fields are filtered for a role (SPEC §4). Every builder downstream
works only on a `View`, so other agents' private turns can neither leak into a pack nor
use up its slots. Anything ambiguous fails closed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter

from context_engine.commands import Cut, command_cut
from context_engine.types import (
    STORY_ORDER,
    DigestView,
    LoreView,
    PackInput,
    ParticipantView,
    StateFieldView,
    TrimEvent,
    TurnView,
)
from context_engine.visibility import can_read

MONOLOGUES_RAW = 2  # SPEC §5.6: an agent sees its own last 2 monologues raw


class UnknownRoleError(ValueError):
    """The role has no participant in the experiment (the API answers 404)."""


@dataclass(frozen=True)
class View:
    role: str
    participant: ParticipantView
    omniscient: bool  # judges read the raw log
    now: int  # the current round (never earlier than the newest visible turn)
    participants: tuple[ParticipantView, ...]  # sorted: dm, players, judges; then role
    dm_roles: frozenset[str]
    turns: tuple[TurnView, ...]  # readable, seq-sorted, monologue rule applied
    stubs: tuple[TurnView, ...]  # whispers the role may not read (existence only)
    lore: tuple[LoreView, ...]  # readable, not rejected, valid now; sorted by id
    state_fields: tuple[StateFieldView, ...]
    digest: DigestView | None
    strategic_summary: DigestView | None
    retrieval_turns: tuple[TurnView, ...]  # readable ranked hits (own monologues too), best first
    retrieval_context: tuple[TurnView, ...]  # readable neighbours of the hits (no monologues)
    cut: Cut | None
    events: tuple[TrimEvent, ...] = field(default=())
    pinned: tuple = ()  # readable results of the role's own active retrieval (TurnView|LoreView)


_KIND_ORDER = {"dm": 0, "player": 1, "judge": 2}


def _sorted_participants(participants: tuple[ParticipantView, ...]) -> tuple:
    return tuple(sorted(participants, key=lambda p: (_KIND_ORDER.get(p.kind, 3), p.role)))


def readable_turn(turn: TurnView, role: str, omniscient: bool) -> bool:
    """The one turn predicate: visibility, plus "monologues are their speaker's only".

    A monologue is private to its speaker even if its stored visibility names others
    (SPEC §4: the DM does not read players' monologues); only judges read them all.
    """
    if not can_read(turn.visibility, role, omniscient=omniscient):
        return False
    return omniscient or turn.kind != "monologue" or turn.speaker == role


def gather(inp: PackInput, *, keep_all_monologues: bool = False) -> View:
    """Filter ``inp`` for ``inp.role``. Raises UnknownRoleError for a stranger."""
    by_role = {p.role: p for p in inp.participants}
    participant = by_role.get(inp.role)
    if participant is None:
        raise UnknownRoleError(f"Unknown role {inp.role!r}: no such participant.")
    role = inp.role
    omniscient = participant.kind == "judge"
    events: list[TrimEvent] = []

    ordered = sorted(inp.turns, key=STORY_ORDER)
    readable: list[TurnView] = []
    stubs: list[TurnView] = []
    own_monologues: list[TurnView] = []
    show_stubs = inp.config.show_whisper_existence and not omniscient
    for turn in ordered:
        if readable_turn(turn, role, omniscient):
            if turn.kind == "monologue" and not omniscient:
                own_monologues.append(turn)
            else:
                readable.append(turn)
        elif show_stubs and turn.kind == "whisper":
            stubs.append(turn)

    strategic = inp.strategic_summary
    if strategic is not None and not can_read(strategic.audience, role, omniscient=omniscient):
        strategic = None
    keep = own_monologues if keep_all_monologues else own_monologues[-MONOLOGUES_RAW:]
    for old in own_monologues[: len(own_monologues) - len(keep)]:
        if strategic is not None:
            events.append(
                TrimEvent(
                    "recent",
                    f"turn:{old.id}",
                    "summarised",
                    "older monologue: condensed in the strategic summary",
                    cause="window",
                )
            )
        else:
            events.append(
                TrimEvent(
                    "recent",
                    f"turn:{old.id}",
                    "dropped",
                    "older monologue: only the last 2 are kept raw and there is "
                    "no strategic summary yet",
                    cause="window",
                )
            )
    turns = tuple(sorted(readable + keep, key=STORY_ORDER))

    # "Now" is the campaign clock the caller passes, never the newest turn's round: a
    # turn's round is input, and reveals and windows must not move with it.
    now = inp.current_round

    lore = tuple(
        sorted(
            (entry for entry in inp.lore if _lore_visible(entry, role, omniscient, now)),
            key=attrgetter("id"),
        )
    )
    fields = tuple(
        f for f in inp.world_state.fields if can_read(f.audience, role, omniscient=omniscient)
    )
    digest = inp.digest
    if digest is not None and not can_read(digest.audience, role, omniscient=omniscient):
        digest = None

    def neighbour(t: TurnView) -> bool:
        return readable_turn(t, role, omniscient) and (omniscient or t.kind != "monologue")

    # Kept in the caller's order: that is the rank, best first. A hit may be the role's
    # own monologue (its older plans, found when the input asks for them); a neighbour
    # is the exchange around a hit, never a monologue but for judges.
    extra = tuple(t for t in inp.retrieval_turns if readable_turn(t, role, omniscient))
    around = tuple(t for t in inp.retrieval_context if neighbour(t))
    pinned = tuple(
        item
        for item in inp.pinned_retrieval
        if (
            can_read(item.audience, role, omniscient=omniscient)
            if isinstance(item, LoreView)
            else readable_turn(item, role, omniscient) and (omniscient or item.kind != "monologue")
        )
    )
    return View(
        pinned=pinned,
        role=role,
        participant=participant,
        omniscient=omniscient,
        now=now,
        participants=_sorted_participants(inp.participants),
        dm_roles=frozenset(p.role for p in inp.participants if p.kind == "dm"),
        turns=turns,
        stubs=tuple(stubs),
        lore=lore,
        state_fields=fields,
        digest=digest,
        strategic_summary=strategic,
        retrieval_turns=extra,
        retrieval_context=around,
        cut=command_cut(inp.events),
        events=tuple(events),
    )


def _lore_visible(entry: LoreView, role: str, omniscient: bool, now: int) -> bool:
    """Readable, not rejected, and true now (packs show the current truth)."""
    if entry.status == "rejected":
        return False
    if entry.invalid_from_round is not None and entry.invalid_from_round <= now:
        return False
    if entry.valid_from_round is not None and entry.valid_from_round > now:
        return False  # a fact that is not yet true in story time (e.g. Arena replays)
    return can_read(entry.audience, role, omniscient=omniscient)


def secret_visible(owner: ParticipantView, view: View) -> bool:
    """May the reader see ``owner``'s secret? Its owner, judges, or after the reveal."""
    if not owner.secret:
        return False
    if owner.role == view.role or view.omniscient:
        return True
    return owner.reveal_round is not None and view.now > owner.reveal_round
