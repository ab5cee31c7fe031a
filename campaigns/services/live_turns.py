"""Stored turns on the live channels (issue 25): the ``turn`` event.

A model's step announces itself with ``stored`` (`relay.streaming`); every other write
of the log — a human's post (`relay.humans.human_turn_create`), a DM's narration, whisper
or GM note from the console, a reveal, a held turn published or discarded, an edit or a
regenerated text (`turn_fixes`) — goes through `announce`, so an open page refreshes its
timeline and round bar at once instead of waiting for a poll. (`turns.turn_create`
announces every new turn, the relay's too: a page that also got ``stored`` refreshes
once, `static/js/live.js` coalescing the two.)

Who is told is decided by the selectors (`selectors.live_channels_for_turn`): the
channels of the turn's audience as it stands when the transaction commits, plus, for a
change of audience or a removal, the channels of the audience it had (they could read it
then). Nothing else hears of it — not even a content-free event, since its existence
and timing would be information. The event carries the turn ids on the omniscient
channels only, ``{}`` elsewhere: a player's page learns "something you may read
changed", nothing more.

Published after the transaction commits (``transaction.on_commit``): a page that
refreshes on the event reads what was stored, and a rolled-back write says nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial

from django.db import transaction

from campaigns.models import Turn
from campaigns.reads import selectors
from campaigns.services import live

OMNISCIENT_CHANNELS = frozenset({selectors.LIVE_ALL, selectors.LIVE_OWNER})


def channels_now(turn: Turn) -> list[str]:
    """The channels of ``turn``'s audience as it stands (before a change, to pass as
    ``before`` to `announce`)."""
    return selectors.live_channels_for_turn(turn)


def announce(turn: Turn, *, before: Iterable[str] = (), gone: bool = False) -> None:
    """Tell ``turn``'s audience, once the transaction commits, that it was stored or
    changed. ``before``: the channels of the audience it had (`channels_now`, read before
    a change of audience); ``gone``: the turn was removed (only ``before`` hears).

    The audience is read from ``turn`` when the transaction commits, so a turn whose
    audience is set later in the same transaction (a held answer narrowed to its
    reviewers by `holds.turn_hold`) is announced to the audience it was stored with."""
    transaction.on_commit(partial(_publish, turn, turn.pk, tuple(before), gone))


def _publish(turn: Turn, pk: int, before: tuple[str, ...], gone: bool) -> None:
    channels = list(dict.fromkeys([*before, *(() if gone else channels_now(turn))]))
    seeing = [ch for ch in channels if ch in OMNISCIENT_CHANNELS]
    others = [ch for ch in channels if ch not in OMNISCIENT_CHANNELS]
    live.publish(turn.experiment_id, seeing, "turn", {"turns": [pk]})
    live.publish(turn.experiment_id, others, "turn", {})
