"""Write services for the World Bible made by people: the DM creates and corrects entries.

Background hydration (`campaigns.services.memory.hydrate`) writes extracted entries; the
services here are the human side. Every change writes a `LoreRevision` naming who made
it and the old and new values. Entries the DM made (``origin="dm"``) and locked entries
are never touched by a task, and a correction is read by the very next pack because
packs read the row, not a cache.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from campaigns.models import Experiment, LoreEntry, LoreRevision
from campaigns.reads.selectors import current_round
from campaigns.validation import clean_round, clean_visibility
from context_engine.memory.extraction import merge_key
from context_engine.visibility import audience_key

MAX_TERM_CHARS = 200
MAX_DEFINITION_CHARS = 4000
_UNSET: Any = object()


def actor_for(user) -> str:
    """How a revision names a person: ``user:alice`` (``user:?`` when unknown)."""
    username = getattr(user, "get_username", lambda: "")() if user is not None else ""
    return f"user:{username or '?'}"


def _clean_term(term: object) -> str:
    if not isinstance(term, str) or not term.strip():
        raise ValidationError({"term": ["A term is a non-empty string."]})
    term = " ".join(term.split())
    if len(term) > MAX_TERM_CHARS:
        raise ValidationError(
            {"term": [f"Term is {len(term)} characters; the limit is {MAX_TERM_CHARS}."]}
        )
    if not merge_key(term):
        raise ValidationError({"term": ["A term needs at least one letter or digit."]})
    return term


def _clean_definition(definition: object) -> str:
    if not isinstance(definition, str):
        raise ValidationError({"definition": ["Definition must be a string."]})
    definition = definition.strip()
    if len(definition) > MAX_DEFINITION_CHARS:
        raise ValidationError(
            {
                "definition": [
                    f"Definition is {len(definition)} characters; "
                    f"the limit is {MAX_DEFINITION_CHARS}."
                ]
            }
        )
    return definition


def _clean_choice(value: object, field: str, choices: list[str]) -> str:
    if value not in choices:
        raise ValidationError(
            {field: [f"{field.capitalize()} must be one of {', '.join(choices)}."]}
        )
    return value  # type: ignore[return-value]


def _clean_round(value: object, field: str) -> int | None:
    return None if value is None else clean_round(value, field=field)


@transaction.atomic
def lore_create(
    *,
    experiment: Experiment,
    user,
    term: str,
    category: str,
    definition: str,
    audience: list[str] | None,
) -> LoreEntry:
    """A DM-made entry: confirmed, ``origin="dm"``, so no background task will change it.

    ``audience`` follows visibility rules (null = everyone, else known roles). A second
    entry with the same merge key for the same audience is a 400 naming ``term``: edit the
    existing one instead.
    """
    term = _clean_term(term)
    category = _clean_choice(category, "category", LoreEntry.Category.values)
    definition = _clean_definition(definition)
    roles = set(experiment.participants.values_list("role", flat=True))
    cleaned = clean_visibility(audience, roles, field="audience")
    key = merge_key(term)
    audience_str = audience_key(None if cleaned is None else tuple(cleaned))
    existing = LoreEntry.objects.filter(
        experiment=experiment, key=key, audience_key=audience_str
    ).first()
    if existing is not None:
        raise ValidationError(
            {
                "term": [
                    f"The World Bible already has {existing.term!r} (id {existing.pk}) for "
                    "this audience; edit that entry instead."
                ]
            }
        )
    round_now = current_round(experiment=experiment)
    try:
        with transaction.atomic():
            entry = LoreEntry.objects.create(
                experiment=experiment,
                term=term,
                key=key,
                category=category,
                definition=definition,
                audience=cleaned,
                audience_key=audience_str,
                status=LoreEntry.Status.CONFIRMED,
                origin=LoreEntry.Origin.DM,
                first_seen_round=round_now,
                last_seen_round=round_now,
            )
    except IntegrityError:  # a concurrent create of the same term and audience won
        raise ValidationError(
            {"term": ["This term was just added for this audience; edit that entry instead."]}
        ) from None
    LoreRevision.objects.create(
        entry=entry,
        actor=actor_for(user),
        user=user,
        changes={
            "term": [None, term],
            "category": [None, category],
            "definition": [None, definition],
            "audience": [None, cleaned],
            "status": [None, entry.status],
        },
    )
    return entry


@transaction.atomic
def lore_update(
    *,
    entry: LoreEntry,
    user,
    definition: str | None = None,
    status: str | None = None,
    locked: bool | None = None,
    invalid_from_round: int | None = _UNSET,
) -> LoreEntry:
    """The DM confirms, corrects, rejects, locks or invalidates an entry.

    Only the fields passed change; each change is one revision row with old and new
    values. Nothing changed → no revision. ``invalid_from_round`` marks a fact that
    stopped being true in story time (null makes it true again); entries are never
    deleted by this service.
    """
    current = LoreEntry.objects.select_for_update().get(pk=entry.pk)
    wanted: dict[str, object] = {}
    if definition is not None:
        wanted["definition"] = _clean_definition(definition)
        if not wanted["definition"]:
            # A correction never wipes an entry (a locked one least of all): an empty
            # box is a slip, not a definition.
            raise ValidationError(
                {"definition": ["A definition cannot be empty; write one, or reject the entry."]}
            )
    if status is not None:
        wanted["status"] = _clean_choice(status, "status", LoreEntry.Status.values)
    if locked is not None:
        if not isinstance(locked, bool):
            raise ValidationError({"locked": ["Locked must be true or false."]})
        wanted["locked"] = locked
    if invalid_from_round is not _UNSET:
        invalid = _clean_round(invalid_from_round, "invalid_from_round")
        if (
            invalid is not None
            and current.valid_from_round is not None
            and invalid < current.valid_from_round
        ):
            raise ValidationError(
                {"invalid_from_round": ["Must not precede the entry's valid_from_round."]}
            )
        wanted["invalid_from_round"] = invalid
    changes = {
        field: [getattr(current, field), value]
        for field, value in wanted.items()
        if getattr(current, field) != value
    }
    if not changes:
        return current
    for field, (_, value) in changes.items():
        setattr(current, field, value)
    current.save(update_fields=[*changes, "updated_at"])
    LoreRevision.objects.create(entry=current, actor=actor_for(user), user=user, changes=changes)
    return current
