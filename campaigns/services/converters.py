"""Pieces every third-party transcript converter writes the same way (CRD3, LoCoMo).

A converted transcript is measured, not played: its roles are run by no model
("offline"), every turn is public, and the experiment is finished.
"""

from __future__ import annotations

from typing import Any

from campaigns.services.transcripts import FORMAT


def offline_participant(role: str, kind: str, order: int) -> dict[str, Any]:
    """A participant with no model, bio or secret: only its name and seat."""
    return {
        "role": role,
        "kind": kind,
        "model": "offline",
        "bio": "",
        "identity": "",
        "secret": "",
        "reveal_round": None,
        "order": order,
    }


def public_turn(round_: int, speaker: str, kind: str, content: str) -> dict[str, Any]:
    """A turn every role may read, with no tags and no hinge."""
    return {
        "round": round_,
        "speaker": speaker,
        "kind": kind,
        "content": content,
        "visibility": None,
        "tags": [],
        "hinge": False,
    }


def finished_transcript(
    name: str, participants: list[dict], turns: list[dict], **extra: Any
) -> dict[str, Any]:
    """The babel-transcript/1 envelope around converted participants and turns."""
    return {
        "format": FORMAT,
        "experiment": {"name": name, "hook": "", "rules": "", "config": {}, "status": "finished"},
        "participants": participants,
        "turns": turns,
        **extra,
    }
