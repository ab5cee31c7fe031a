"""Who a derived artifact is for, and which turns it may be made from (SPEC §4).

A digest audience is one non-judge participant (`audiences_for`): a digest shared by a
group would tell each member about what the others read. `turns_for_audience` still
takes any audience (a stored digest of an older, grouped audience is re-derived by it).
Visibility itself is decided by `campaigns.reads.selectors`; this module only
intersects what the selector returns, and re-checks every row with the
engine's `can_read` so both halves of the rule must agree (fail closed).

Digest-eligible turns exclude monologues (they reach only their own agent's strategic
summary) and turns flagged ``needs_review`` (unparsed agent output, never published).
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models import QuerySet

from campaigns.models import Experiment, Participant, Turn
from campaigns.reads.selectors import (
    UnknownRole,
    dm_roles,
    turns_visible_to,
    viewer_for_participant,
)
from context_engine.visibility import can_read, parse_stored_visibility

Audience = tuple[str, ...]


def digest_turns(queryset: QuerySet[Turn]) -> QuerySet[Turn]:
    """Narrow turns to those a digest or a lore entry may draw on."""
    return queryset.exclude(kind=Turn.Kind.MONOLOGUE).filter(needs_review=False)


def _readers(experiment: Experiment) -> list[Participant]:
    return list(
        experiment.participants.exclude(kind=Participant.Kind.JUDGE).order_by("order", "id")
    )


def audiences_for(*, experiment: Experiment, round_to: int | None = None) -> list[Audience]:
    """The digest audiences of an experiment: one per non-judge participant, ``(role,)``.

    Never a group of participants who happen to read the same turns: whether Wren shares
    Thorin's digest depends on what Wren reads and Thorin does not (a whisper between
    Wren and Cassia would split them), so a shared digest's label, its versions and when
    it is rebuilt would tell Thorin about turns hidden from him (issue 23, finding 5).
    Each participant's digest line is a function of their own readable turns only.
    ``round_to`` is kept for callers; the audiences do not depend on it.
    """
    return sorted((participant.role,) for participant in _readers(experiment))


def audience_of_role(*, experiment: Experiment, role: str, round_to: int | None = None) -> Audience:
    """The digest audience ``role`` belongs to (UnknownRole for a non-reader)."""
    for audience in audiences_for(experiment=experiment, round_to=round_to):
        if role in audience:
            return audience
    raise UnknownRole(role)


def turns_for_audience(
    *,
    experiment: Experiment,
    audience: Sequence[str],
    round_to: int | None = None,
    after_seq: int = 0,
    up_to_seq: int | None = None,
) -> list[Turn]:
    """Digest-eligible turns that *every* member of ``audience`` may read, in seq order.

    Each member's set comes from the visibility selector; the intersection is then
    re-checked row by row with the engine's rule. An empty or unknown audience reads
    nothing.
    """
    if not audience:
        return []
    participants = {p.role: p for p in experiment.participants.filter(role__in=list(audience))}
    if set(audience) - set(participants):
        raise UnknownRole(sorted(set(audience) - set(participants))[0])
    viewers = [viewer_for_participant(participants[role]) for role in sorted(set(audience))]
    ids: set[int] | None = None
    for viewer in viewers:
        queryset = digest_turns(turns_visible_to(experiment=experiment, viewer=viewer)).filter(
            seq__gt=after_seq
        )
        if round_to is not None:
            queryset = queryset.filter(round__lte=round_to)
        if up_to_seq is not None:
            queryset = queryset.filter(seq__lte=up_to_seq)
        member_ids = set(queryset.values_list("pk", flat=True))
        ids = member_ids if ids is None else ids & member_ids
    if not ids:
        return []
    dms = dm_roles(experiment=experiment)
    rows = Turn.objects.filter(pk__in=ids).order_by("seq")
    return [
        turn
        for turn in rows
        if all(
            can_read(
                parse_stored_visibility(turn.visibility, dms),
                viewer.role,
                omniscient=viewer.omniscient,
            )
            for viewer in viewers
        )
    ]
