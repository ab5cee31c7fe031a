"""Planted facts (the transcript's optional ``facts``): validation, import, export.

A fact is ``{"id": str, "round": int, "audience": null | [roles], "answer": [str, ...],
"question": str}``: introduced in ``round``, readable by ``audience`` (null = everyone),
known when every ``answer`` string appears. The Arena scores packs on them. Errors name
the element and field, e.g. ``facts[2].answer``; import is part of the transcript's one
transaction, so a bad fact stores nothing at all.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError

from campaigns.models import Experiment, Fact
from campaigns.validation import clean_round, clean_visibility

FACT_KEYS = ("id", "round", "audience", "answer", "question")
MAX_FACT_ID = 200
MAX_ANSWER_STRINGS = 20
MAX_ANSWER_CHARS = 500
MAX_QUESTION_CHARS = 2000


def fact_fields(item: object, roles: set[str], prefix: str) -> dict[str, Any]:
    """The model fields of one transcript fact, or ValidationError naming ``prefix`` + field."""
    if not isinstance(item, dict):
        raise ValidationError({prefix.rstrip("."): ["Must be an object."]})
    unknown = sorted(set(item) - set(FACT_KEYS))
    if unknown:
        raise ValidationError({f"{prefix}{key}": ["Unknown field."] for key in unknown})
    key = item.get("id")
    if not isinstance(key, str) or not key.strip() or len(key) > MAX_FACT_ID:
        raise ValidationError(
            {f"{prefix}id": [f"A fact id is a non-empty string (≤ {MAX_FACT_ID} chars)."]}
        )
    round_ = item.get("round")
    clean_round(round_, field=f"{prefix}round")
    answer = item.get("answer")
    if (
        not isinstance(answer, list)
        or not answer
        or len(answer) > MAX_ANSWER_STRINGS
        or not all(isinstance(s, str) and s.strip() and len(s) <= MAX_ANSWER_CHARS for s in answer)
    ):
        raise ValidationError(
            {
                f"{prefix}answer": [
                    f"Must be a list of 1–{MAX_ANSWER_STRINGS} non-empty strings "
                    f"(≤ {MAX_ANSWER_CHARS} chars each)."
                ]
            }
        )
    question = item.get("question")
    if not isinstance(question, str) or not question.strip() or len(question) > MAX_QUESTION_CHARS:
        raise ValidationError(
            {
                f"{prefix}question": [
                    f"A question is a non-empty string (≤ {MAX_QUESTION_CHARS} chars)."
                ]
            }
        )
    if "audience" not in item:
        raise ValidationError({f"{prefix}audience": ["Required: null (everyone) or roles."]})
    audience = clean_visibility(item["audience"], roles, field=f"{prefix}audience")
    return {
        "key": key,
        "round": round_,
        "audience": audience,
        "answer": answer,
        "question": question,
    }


def facts_import(*, experiment: Experiment, roles: set[str], items: list) -> list[Fact]:
    """Store a transcript's facts (call inside the import's transaction)."""
    rows: list[Fact] = []
    seen: set[str] = set()
    for index, item in enumerate(items):
        prefix = f"facts[{index}]."
        fields = fact_fields(item, roles, prefix)
        if fields["key"] in seen:
            raise ValidationError({f"{prefix}id": ["Duplicate fact id."]})
        seen.add(fields["key"])
        rows.append(Fact(experiment=experiment, position=index, **fields))
    return Fact.objects.bulk_create(rows, batch_size=1000)


def facts_export(*, experiment: Experiment) -> list[dict[str, Any]]:
    """The experiment's facts in transcript form and file order."""
    return [
        {
            "id": fact.key,
            "round": fact.round,
            "audience": fact.audience,
            "answer": fact.answer,
            "question": fact.question,
        }
        for fact in experiment.facts.order_by("position", "id")
    ]
