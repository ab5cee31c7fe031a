"""Evidence-recall questions (the transcript's optional ``questions``): validation, import,
export.

A question is ``{"question": str, "answer": str, "evidence": [turn keys], "category": str,
"role": str (optional), "asked_at_round": int}``: the Arena builds the asking role's pack at
``asked_at_round`` with the question as its input and counts the evidence turns whose text
is in it (SPEC §5.7). Without ``role``, every non-judge role that can read some evidence
is asked. Evidence is stored as turn ids and exported as the turns' keys again, so an
import → export is byte-identical. Errors name the element and field, e.g.
``questions[3].evidence[0]``; import is part of the transcript's one transaction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.core.exceptions import ValidationError

from campaigns.models import Experiment, Question
from campaigns.services.facts import MAX_QUESTION_CHARS
from campaigns.validation import clean_round

QUESTION_KEYS = ("question", "answer", "evidence", "category", "role", "asked_at_round")
MAX_ANSWER_CHARS = 2000
MAX_CATEGORY_CHARS = 64
MAX_EVIDENCE = 100


def _text(item: dict, key: str, prefix: str, limit: int) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value.strip() or len(value) > limit:
        raise ValidationError({f"{prefix}{key}": [f"A non-empty string (≤ {limit} chars)."]})
    return value


def _evidence(value: object, turn_keys: Mapping[str, int], prefix: str) -> list[int]:
    """The evidence keys as turn indexes (file order kept)."""
    if not isinstance(value, list) or len(value) > MAX_EVIDENCE:
        raise ValidationError(
            {f"{prefix}evidence": [f"Must be a list of at most {MAX_EVIDENCE} turn keys."]}
        )
    indexes: list[int] = []
    for position, key in enumerate(value):
        field = f"{prefix}evidence[{position}]"
        index = turn_keys.get(key) if isinstance(key, str) else None
        if index is None:
            raise ValidationError({field: ["No turn has this key."]})
        if index in indexes:
            raise ValidationError({field: ["Duplicate key."]})
        indexes.append(index)
    return indexes


def question_fields(
    item: object,
    *,
    roles: set[str],
    turn_keys: Mapping[str, int],
    last_round: int,
    prefix: str,
) -> dict[str, Any]:
    """The fields of one transcript question (evidence as turn indexes), or ValidationError
    naming ``prefix`` + field."""
    if not isinstance(item, dict):
        raise ValidationError({prefix.rstrip("."): ["Must be an object."]})
    unknown = sorted(set(item) - set(QUESTION_KEYS))
    if unknown:
        raise ValidationError({f"{prefix}{key}": ["Unknown field."] for key in unknown})
    fields: dict[str, Any] = {
        "question": _text(item, "question", prefix, MAX_QUESTION_CHARS),
        "answer": _text(item, "answer", prefix, MAX_ANSWER_CHARS),
        "evidence": _evidence(item.get("evidence"), turn_keys, prefix),
        "category": _text(item, "category", prefix, MAX_CATEGORY_CHARS),
        "role": "",
    }
    if "role" in item:
        role = item["role"]
        if not isinstance(role, str) or role not in roles:
            raise ValidationError(
                {
                    f"{prefix}role": [
                        "Must be a participant's role (omit it to ask every role that can "
                        "read the evidence)."
                    ]
                }
            )
        fields["role"] = role
    asked = clean_round(item.get("asked_at_round"), field=f"{prefix}asked_at_round")
    if asked > last_round:
        raise ValidationError(
            {f"{prefix}asked_at_round": [f"Must be a round of the transcript (0–{last_round})."]}
        )
    fields["asked_at_round"] = asked
    return fields


def questions_import(
    *,
    experiment: Experiment,
    roles: set[str],
    items: list,
    turn_keys: Mapping[str, int],
    turn_ids: Sequence[int],
    last_round: int,
) -> list[Question]:
    """Store a transcript's questions (inside the import's transaction). ``turn_keys`` maps
    a turn key to its index in the transcript, ``turn_ids`` an index to the stored id."""
    rows = []
    for index, item in enumerate(items):
        fields = question_fields(
            item,
            roles=roles,
            turn_keys=turn_keys,
            last_round=last_round,
            prefix=f"questions[{index}].",
        )
        fields["evidence"] = [turn_ids[i] for i in fields["evidence"]]
        rows.append(Question(experiment=experiment, position=index, **fields))
    return Question.objects.bulk_create(rows, batch_size=1000)


def questions_export(*, experiment: Experiment, key_of: Mapping[int, str]) -> list[dict]:
    """The experiment's questions in transcript form and file order (``key_of``: turn id →
    key)."""
    out = []
    for q in experiment.questions.order_by("position", "id"):
        item: dict[str, Any] = {
            "question": q.question,
            "answer": q.answer,
            "evidence": [key_of[i] for i in q.evidence if i in key_of],
            "category": q.category,
        }
        if q.role:
            item["role"] = q.role
        item["asked_at_round"] = q.asked_at_round
        out.append(item)
    return out
