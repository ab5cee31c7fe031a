"""The transcript format (SPEC §8) as documentation for the OpenAPI schema.

Import and export go through `campaigns.services.transcripts`, which owns the format
and its validation; these serializers only describe it.
"""

from __future__ import annotations

from rest_framework import serializers

from campaigns.api.serializers.base import RoleListOutField
from campaigns.api.serializers.experiments import ConfigField
from campaigns.models import Experiment, LoreEntry, Participant, Turn
from campaigns.services.transcripts import FORMAT


class TranscriptExperimentSerializer(serializers.Serializer):
    name = serializers.CharField()
    hook = serializers.CharField(allow_blank=True)
    rules = serializers.CharField(allow_blank=True)
    config = ConfigField()
    status = serializers.ChoiceField(choices=Experiment.Status.choices)


class TranscriptParticipantSerializer(serializers.Serializer):
    role = serializers.CharField()
    kind = serializers.ChoiceField(choices=Participant.Kind.choices)
    model = serializers.CharField()
    bio = serializers.CharField(allow_blank=True)
    identity = serializers.CharField(allow_blank=True)
    secret = serializers.CharField(allow_blank=True)
    reveal_round = serializers.IntegerField(allow_null=True)
    order = serializers.IntegerField()


class TranscriptTurnSerializer(serializers.Serializer):
    key = serializers.CharField(
        required=False,
        max_length=64,
        help_text="Optional, unique in the transcript: what questions' evidence names.",
    )
    round = serializers.IntegerField()
    speaker = serializers.CharField()
    kind = serializers.ChoiceField(choices=Turn.Kind.choices)
    content = serializers.CharField()
    visibility = RoleListOutField()
    tags = serializers.ListField(child=serializers.CharField())
    hinge = serializers.BooleanField()
    needs_review = serializers.BooleanField(required=False)


class TranscriptLoreSerializer(serializers.Serializer):
    term = serializers.CharField()
    category = serializers.ChoiceField(choices=LoreEntry.Category.choices)
    definition = serializers.CharField(allow_blank=True)
    audience = RoleListOutField()
    status = serializers.ChoiceField(choices=LoreEntry.Status.choices)
    origin = serializers.ChoiceField(choices=LoreEntry.Origin.choices)
    locked = serializers.BooleanField()
    first_seen_round = serializers.IntegerField()
    last_seen_round = serializers.IntegerField()
    mention_count = serializers.IntegerField()
    valid_from_round = serializers.IntegerField(allow_null=True)
    invalid_from_round = serializers.IntegerField(allow_null=True)
    source_turns = serializers.ListField(
        child=serializers.IntegerField(), help_text="Indexes into `turns`."
    )


class TranscriptFactSerializer(serializers.Serializer):
    id = serializers.CharField()
    round = serializers.IntegerField()
    audience = RoleListOutField()
    answer = serializers.ListField(child=serializers.CharField())
    question = serializers.CharField()


class TranscriptQuestionSerializer(serializers.Serializer):
    question = serializers.CharField()
    answer = serializers.CharField()
    evidence = serializers.ListField(
        child=serializers.CharField(), help_text="Keys of the turns that hold the answer."
    )
    category = serializers.CharField()
    role = serializers.CharField(
        required=False,
        help_text="Whose pack is asked; absent: every non-judge role that can read evidence.",
    )
    asked_at_round = serializers.IntegerField()


class TranscriptSerializer(serializers.Serializer):
    format = serializers.ChoiceField(choices=[FORMAT])
    experiment = TranscriptExperimentSerializer()
    participants = TranscriptParticipantSerializer(many=True)
    turns = TranscriptTurnSerializer(many=True, help_text="In seq order.")
    lore = TranscriptLoreSerializer(many=True)
    facts = TranscriptFactSerializer(
        many=True, required=False, help_text="Optional: the Arena's planted facts."
    )
    questions = TranscriptQuestionSerializer(
        many=True, required=False, help_text="Optional: the Arena's evidence-recall questions."
    )


# The import body, as loosely as the importer accepts it: the importer checks every
# element and answers 400 naming it (e.g. ``turns[3].visibility``).
TRANSCRIPT_IMPORT_SCHEMA = {
    "type": "object",
    "description": (
        f"A transcript as `GET /api/experiments/{{id}}/export/` returns it ({FORMAT}). "
        "Unknown fields at any level are rejected."
    ),
    "properties": {
        "format": {"type": "string", "enum": [FORMAT]},
        "experiment": {"type": "object"},
        "participants": {"type": "array", "items": {"type": "object"}},
        "turns": {"type": "array", "items": {"type": "object"}},
        "lore": {"type": "array", "items": {"type": "object"}},
        "facts": {"type": "array", "items": {"type": "object"}},
        "questions": {"type": "array", "items": {"type": "object"}},
    },
    "required": ["experiment", "participants", "turns"],
    "additionalProperties": False,
}
