"""Request examples for the OpenAPI docs (Swagger UI "Try it out" and contract tests)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample

from campaigns.services.transcripts import FORMAT


def _example(name: str, value: dict, summary: str = "") -> OpenApiExample:
    return OpenApiExample(name, value=value, summary=summary or name, request_only=True)


TURN_EXAMPLES = [
    _example(
        "Public narration",
        {"round": 1, "speaker": "DM", "kind": "narrative", "content": "The tide pulls back."},
    ),
    _example(
        "A GM note",
        {
            "round": 1,
            "speaker": "DM",
            "kind": "gm_note",
            "content": "The door is a trap.",
            "visibility": ["DM"],
            "tags": ["thread:door"],
            "hinge": True,
        },
    ),
]
PARTICIPANT_EXAMPLES = [
    _example(
        "A player with a secret",
        {
            "role": "Brannoc",
            "kind": "player",
            "model": "offline",
            "bio": "A ferryman who knows the tides.",
            "secret": "He sank the ferry himself.",
            "reveal_round": 6,
        },
    )
]
LORE_EXAMPLES = [
    _example(
        "A DM-only entry",
        {
            "term": "Tide Codex",
            "category": "artifact",
            "definition": "A book that writes itself at low tide.",
            "audience": ["DM"],
        },
    )
]
COMMAND_EXAMPLES = [_example("Checkpoint everyone", {"command": "checkpoint"})]
TRANSCRIPT_EXAMPLES = [
    _example(
        "A one-turn campaign",
        {
            "format": FORMAT,
            "experiment": {"name": "Low Tide", "hook": "A door appears.", "rules": ""},
            "participants": [{"role": "DM", "kind": "dm"}, {"role": "Thorin"}],
            "turns": [
                {
                    "round": 1,
                    "speaker": "DM",
                    "kind": "narrative",
                    "content": "The door is sealed with tide-script.",
                    "visibility": None,
                    "tags": [],
                    "hinge": False,
                }
            ],
            "lore": [],
        },
    )
]
