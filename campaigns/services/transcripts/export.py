"""Export: an experiment as a transcript (turns in seq order, lore sources as indexes)."""

from __future__ import annotations

import json
from typing import Any

from campaigns.models import LORE_FIELDS, Experiment, Turn
from campaigns.services.facts import facts_export
from campaigns.services.questions import questions_export
from campaigns.services.transcripts.common import FORMAT


def export_transcript(*, experiment: Experiment) -> dict[str, Any]:
    """The whole experiment as a transcript dict (owner's view: everything published;
    turns the output guard holds are not part of the log until the DM publishes them)."""
    turns = list(experiment.turns.filter(held_at__isnull=True).order_by("seq"))
    index_of = {turn.pk: index for index, turn in enumerate(turns)}
    lore = experiment.lore.order_by("key", "audience_key", "id").prefetch_related("source_turns")
    transcript = {
        "format": FORMAT,
        "experiment": {
            "name": experiment.name,
            "hook": experiment.hook,
            "rules": experiment.rules,
            "config": experiment.config,
            "status": experiment.status,
        },
        "participants": [
            {
                "role": p.role,
                "kind": p.kind,
                "model": p.model,
                "bio": p.bio,
                "identity": p.identity,
                "secret": p.secret,
                "reveal_round": p.reveal_round,
                "order": p.order,
            }
            for p in experiment.participants.order_by("order", "id")
        ],
        "turns": [_export_turn(turn) for turn in turns],
        "lore": [
            {
                **{field: getattr(entry, field) for field in LORE_FIELDS},
                "source_turns": sorted(
                    index_of[t.pk] for t in entry.source_turns.all() if t.pk in index_of
                ),
            }
            for entry in lore
        ],
    }
    facts = facts_export(experiment=experiment)
    if facts:  # optional: a transcript without facts round-trips without the key
        transcript["facts"] = facts
    key_of = {turn.pk: turn.key for turn in turns if turn.key}
    questions = questions_export(experiment=experiment, key_of=key_of)
    if questions:  # optional, as facts
        transcript["questions"] = questions
    return transcript


def _export_turn(turn: Turn) -> dict[str, Any]:
    data: dict[str, Any] = {"key": turn.key} if turn.key else {}
    data |= {
        "round": turn.round,
        "speaker": turn.speaker,
        "kind": turn.kind,
        "content": turn.content,
        "visibility": turn.visibility,
        "tags": turn.tags,
        "hinge": turn.hinge,
    }
    if turn.needs_review:
        data["needs_review"] = True
    return data


def dumps(transcript: dict[str, Any]) -> str:
    """Stable text form: same transcript → same bytes."""
    return json.dumps(transcript, indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def export_file(*, experiment: Experiment) -> tuple[bytes, str]:
    """The export as a download: its bytes and file name (the API's and the console's)."""
    text = dumps(export_transcript(experiment=experiment))
    return text.encode("utf-8"), f"experiment-{experiment.pk}.json"
