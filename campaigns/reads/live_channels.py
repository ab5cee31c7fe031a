"""Live channels (issue 25): which pages a streamed or published text reaches.

A model's answer streams to the pages entitled to it over one channel per audience. Who
reads a channel follows the selectors' rules (`campaigns.reads.selectors`): a text of
visibility V reaches the roles in V (a monologue's V is its speaker alone), a public one
everyone; omniscient readers (owner, staff, judges) read everything; the guard's held
drafts only their reviewers. Each viewer subscribes to channels that never overlap, so
no event reaches a page twice.
"""

from __future__ import annotations

from collections.abc import Iterable

from campaigns.models import Turn
from campaigns.reads.selectors import Viewer

LIVE_PUBLIC = "public"
LIVE_ALL = "all"  # everything published, for omniscient readers
LIVE_OWNER = "owner"  # held drafts and job messages: the owner and staff (editors)


def live_role_channel(role: str) -> str:
    return f"role:{role}"


def live_held_channel(role: str) -> str:
    return f"held:{role}"


def audiences_for_viewer(viewer: Viewer) -> list[str]:
    """Exactly the live channels ``viewer`` may subscribe to, in a fixed order."""
    if viewer.omniscient:
        channels = [LIVE_ALL]
        if viewer.reviews_held:
            channels.append(LIVE_OWNER)
        return channels
    if viewer.role is None:
        return [LIVE_PUBLIC]
    channels = [LIVE_PUBLIC, live_role_channel(viewer.role)]
    if viewer.reviews_held:
        channels.append(live_held_channel(viewer.role))
    return channels


def live_channels_for_audience(visibility) -> list[str]:
    """The channels a published text of ``visibility`` (None: public; else the sorted
    roles that read it — a monologue's is its speaker alone) goes to."""
    if visibility is None:
        return [LIVE_ALL, LIVE_PUBLIC]
    return [LIVE_ALL, *(live_role_channel(role) for role in sorted(set(visibility)))]


def live_channels_for_held(review: Iterable[str]) -> list[str]:
    """The channels of a draft the output guard held: the owner's and its reviewers'."""
    return [LIVE_OWNER, *(live_held_channel(role) for role in sorted(set(review)))]


def live_channels_for_turn(turn: Turn) -> list[str]:
    """The channels of the readers of a stored ``turn`` (the ``turn`` event), by the
    same rules as `turns_visible_to`: held, its reviewers (the owner's channel and those
    of the roles its stored review audience names); a monologue, its speaker; else its
    stored visibility (null: everyone). A corrupt visibility fails closed: the
    omniscient readers only."""
    value = turn.visibility
    roles = (
        list(value)
        if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value)
        else None
    )
    if turn.held_at is not None:
        return live_channels_for_held(roles or ())
    if turn.kind == Turn.Kind.MONOLOGUE:
        return live_channels_for_audience([turn.speaker])
    if value is None:
        return live_channels_for_audience(None)
    if roles is None:
        return [LIVE_ALL]
    return live_channels_for_audience(roles)
