"""The elements of a ``babel-transcript/1`` transcript as plain dicts, for the generator."""

from __future__ import annotations


def turn_item(round_, speaker, kind, content, *, visibility=None, tags=None, hinge=False) -> dict:
    return {
        "round": round_,
        "speaker": speaker,
        "kind": kind,
        "content": content,
        "visibility": visibility,
        "tags": list(tags or []),
        "hinge": hinge,
    }


def participant(role, kind, bio, secret, reveal_round, order) -> dict:
    return {
        "role": role,
        "kind": kind,
        "model": "human",
        "bio": bio,
        "identity": "",
        "secret": secret,
        "reveal_round": reveal_round,
        "order": order,
    }


def lore_entry(
    term, category, definition, audience, first, last, *, valid_from=None, invalid_from=None
) -> dict:
    return {
        "term": term,
        "category": category,
        "definition": definition,
        "audience": audience,
        "status": "confirmed",
        "origin": "dm",
        "locked": False,
        "first_seen_round": first,
        "last_seen_round": last,
        "mention_count": 2,
        "valid_from_round": valid_from,
        "invalid_from_round": invalid_from,
        "source_turns": [],
    }
