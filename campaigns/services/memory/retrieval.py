"""Active retrieval (SPEC §5.8): /search QUERY, /lore TERM, /timeline FROM..TO.

Each always runs and answers out of band (the API, the console, a relay tool), as the
role asking would see it: results come from the visibility selector for that role and
nothing else, so another audience's text never appears and neither does any count or
hint of what was left out. With a role, the result's ids are also pinned
(`RetrievalPin`) for that role's next pack, where they lead the retrieval section,
re-read through the selector at pack time and cut to the section's budget.
"""

from __future__ import annotations

import re

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max

from campaigns.models import Experiment, LoreEntry, RetrievalPin, Turn
from campaigns.reads.numbering import shown_lore, shown_turns
from campaigns.reads.packs import pin_id_query, pin_id_rows
from campaigns.reads.precompiled import json_value
from campaigns.reads.search import search_turns
from campaigns.reads.selectors import Viewer, lore_visible_to, turns_visible_to
from context_engine.commands import RETRIEVAL_COMMANDS
from context_engine.memory import merge_key
from context_engine.memory._text import clip_words

MAX_RESULTS = 10
MAX_TIMELINE = 30
MAX_PINNED = 10
PINS_READ = 5  # a pack reads the role's newest five pins
SNIPPET_WORDS = 60
MAX_QUERY_CHARS = 200
_RANGE = re.compile(r"^\s*(\d{1,6})\s*(?:\.\.|–|-)?\s*(\d{1,6})?\s*$")


def _turn(turn: Turn) -> dict:
    return {
        "id": turn.shown_id,  # as the reader is shown it (`numbering.shown_turns`)
        "seq": turn.shown_seq,
        "round": turn.round,
        "speaker": turn.speaker,
        "kind": turn.kind,
        "text": clip_words(" ".join(turn.content.split()), SNIPPET_WORDS),
    }


def _lore(entry: LoreEntry) -> dict:
    return {
        "id": entry.shown_id,  # as the reader is shown it (`numbering.shown_lore`)
        "term": entry.term,
        "category": entry.category,
        "definition": entry.definition,
        "status": entry.status,
    }


def parse_rounds(query: str) -> tuple[int, int]:
    """``FROM..TO`` (or ``FROM-TO``, or one round) as an inclusive range; 400 otherwise."""
    match = _RANGE.match(query or "")
    if not match:
        raise ValidationError({"query": ["Use FROM..TO with round numbers, e.g. 2..5."]})
    first = int(match.group(1))
    last = int(match.group(2)) if match.group(2) is not None else first
    if last < first:
        raise ValidationError({"query": [f"The range ends ({last}) before it starts ({first})."]})
    return first, last


def retrieval_run(
    *,
    experiment: Experiment,
    viewer: Viewer,
    command: str,
    query: str,
    pin: bool = True,
    user=None,
) -> dict:
    """Run one active retrieval as ``viewer``; pin it for the role's next pack."""
    if command not in RETRIEVAL_COMMANDS:
        raise ValidationError(
            {"command": [f"Unknown command {command!r}; use {', '.join(RETRIEVAL_COMMANDS)}."]}
        )
    query = " ".join(str(query or "").split())
    if not query:
        raise ValidationError({"query": ["This command needs a query."]})
    if len(query) > MAX_QUERY_CHARS:
        raise ValidationError({"query": [f"At most {MAX_QUERY_CHARS} characters."]})
    turns: list[Turn] = []
    lore: list[LoreEntry] = []
    readable_lore = lore_visible_to(experiment=experiment, viewer=viewer).exclude(
        status=LoreEntry.Status.REJECTED
    )
    if command == "search":
        turns = search_turns(experiment=experiment, viewer=viewer, text=query, limit=MAX_RESULTS)
        words = [w for w in merge_key(query).split() if len(w) > 2]
        for entry in readable_lore.order_by("-last_seen_round", "id"):
            if any(w in entry.key.split() for w in words):
                lore.append(entry)
            if len(lore) >= MAX_RESULTS:
                break
    elif command == "lore":
        key = merge_key(query)
        exact = list(readable_lore.filter(key=key).order_by("id"))
        partial = list(
            readable_lore.filter(term__icontains=query).exclude(key=key).order_by("term", "id")
        )
        lore = (exact + partial)[:MAX_RESULTS]
    else:
        first, last = parse_rounds(query)
        turns = list(
            turns_visible_to(experiment=experiment, viewer=viewer)
            .filter(round__gte=first, round__lte=last)
            .exclude(needs_review=True)
            .order_by("seq")[:MAX_TIMELINE]
        )
    pinned = False
    if pin and viewer.role and not viewer.omniscient:
        with transaction.atomic():
            last_seq = Turn.objects.filter(experiment=experiment).aggregate(s=Max("seq"))["s"]
            RetrievalPin.objects.create(
                experiment=experiment,
                role=viewer.role,
                command=command,
                query=query,
                seq=last_seq or 0,
                turn_ids=[t.pk for t in turns],
                lore_ids=[e.pk for e in lore],
                user=user if getattr(user, "pk", None) else None,
            )
        pinned = True
    turns = shown_turns(experiment=experiment, viewer=viewer, turns=turns)
    lore = shown_lore(experiment=experiment, viewer=viewer, entries=lore)
    return {
        "command": command,
        "query": query,
        "role": viewer.role or None,
        "turns": [_turn(t) for t in turns],
        "lore": [_lore(e) for e in lore],
        "pinned": pinned,
    }


def pin_reasons(*, experiment_id: int, role: str) -> dict[str, str]:
    """Item ref (``turn:ID`` / ``lore:ID``) → why it is pinned, for the inspector.

    Only annotates: the inspector looks refs up for items already in the role's pack,
    so an id the role may not read (never in its pack) is never shown.
    """
    reasons: dict[str, str] = {}
    pins = pin_id_query(
        experiment_id=experiment_id,
        role=role,
        count=PINS_READ,
        columns=("turn_ids", "lore_ids", "command", "query"),
    ).rows()
    for turn_ids, lore_ids, command, query in pins:
        why = f"pinned by /{command} “{query}” (until {role}'s next turn)"
        for prefix, ids in (("turn", json_value(turn_ids)), ("lore", json_value(lore_ids))):
            for item in ids or ():
                reasons.setdefault(f"{prefix}:{item}", why)
    return reasons


def pinned_for_role(*, experiment_id: int, role: str, viewer: Viewer) -> tuple[list, list]:
    """(turns, lore) the role pinned since its last own turn, re-read as ``viewer``."""
    pins = pin_id_rows(experiment_id=experiment_id, role=role, count=PINS_READ)
    return pinned_from_rows(pins, experiment_id=experiment_id, viewer=viewer)


def pinned_from_rows(pins: list[tuple], *, experiment_id: int, viewer: Viewer) -> tuple[list, list]:
    """(turns, lore) of the pin rows of `packs.pin_id_query`, re-read as ``viewer``
    (no query at all when nothing is pinned)."""
    turn_ids: list[int] = []
    lore_ids: list[int] = []
    for pin_turns, pin_lore in pins:
        turn_ids += [
            i for i in json_value(pin_turns) or () if isinstance(i, int) and i not in turn_ids
        ]
        lore_ids += [
            i for i in json_value(pin_lore) or () if isinstance(i, int) and i not in lore_ids
        ]
    if not turn_ids and not lore_ids:
        return [], []
    turns = {
        t.pk: t
        for t in turns_visible_to(experiment=experiment_id, viewer=viewer).filter(
            pk__in=turn_ids[:MAX_PINNED]
        )
    }
    lore = {
        e.pk: e
        for e in lore_visible_to(experiment=experiment_id, viewer=viewer)
        .exclude(status=LoreEntry.Status.REJECTED)
        .filter(pk__in=lore_ids[:MAX_PINNED])
    }
    return (
        [turns[i] for i in turn_ids[:MAX_PINNED] if i in turns],
        [lore[i] for i in lore_ids[:MAX_PINNED] if i in lore],
    )
