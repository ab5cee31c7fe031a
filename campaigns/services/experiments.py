"""Write services for experiments and participants."""

from __future__ import annotations

import json

from django.core.exceptions import ValidationError
from django.db import transaction

from campaigns.models import Experiment, Participant, Turn, WorldState
from campaigns.services.providers import PROVIDER_FIELDS, clean_provider_fields
from campaigns.validation import clean_config, clean_role_name, clean_round
from context_engine.llm.usage import MAX_OUTPUT_TOKENS_LIMIT, TEMPERATURE_MAX
from context_engine.types import DEFAULT_BUDGETS

MAX_ORDER = 2**31 - 1  # a PositiveIntegerField on PostgreSQL
PARTICIPANT_KINDS = [choice for choice, _ in Participant.Kind.choices]


@transaction.atomic
def experiment_create(
    *,
    name: str,
    hook: str = "",
    rules: str = "",
    config: dict | None = None,
    owner=None,
    status: str = Experiment.Status.DRAFT,
) -> Experiment:
    if not isinstance(name, str) or not name.strip():
        raise ValidationError({"name": ["Name must be a non-empty string."]})
    if status not in Experiment.Status.values:
        raise ValidationError(
            {"status": [f"Status must be one of {', '.join(Experiment.Status.values)}."]}
        )
    experiment = Experiment.objects.create(
        name=name.strip()[:200],
        hook=hook or "",
        rules=rules or "",
        config=clean_config(config),
        owner=owner,
        status=status,
    )
    WorldState.objects.create(experiment=experiment)
    return experiment


@transaction.atomic
def experiment_update(*, experiment: Experiment, **changes) -> Experiment:
    allowed = {"name", "hook", "rules", "config", "status"}
    unknown = set(changes) - allowed
    if unknown:
        raise ValidationError({key: ["This field cannot be changed."] for key in sorted(unknown)})
    if "name" in changes and (not isinstance(changes["name"], str) or not changes["name"].strip()):
        raise ValidationError({"name": ["Name must be a non-empty string."]})
    if "config" in changes:
        changes["config"] = clean_config(changes["config"])
    if "status" in changes and changes["status"] not in Experiment.Status.values:
        raise ValidationError(
            {"status": [f"Status must be one of {', '.join(Experiment.Status.values)}."]}
        )
    for field, value in changes.items():
        setattr(experiment, field, value)
    experiment.save(update_fields=[*changes, "updated_at"])
    return experiment


@transaction.atomic
def experiment_delete(*, experiment: Experiment) -> None:
    """Delete an experiment and everything under it (turns, lore, digests, jobs)."""
    experiment.delete()


def clean_model_settings(*, temperature: object = None, max_output_tokens: object = None) -> None:
    """A participant's sampling settings: temperature 0–2, max output tokens 1–65536 (the
    largest answer Gemini 2.5 Flash gives); ``None`` keeps the provider's default."""
    errors: dict[str, list[str]] = {}
    if temperature is not None and (
        isinstance(temperature, bool)
        or not isinstance(temperature, int | float)
        or not 0 <= temperature <= TEMPERATURE_MAX
    ):
        errors["temperature"] = [f"Temperature must be a number from 0 to {TEMPERATURE_MAX:g}."]
    if max_output_tokens is not None and (
        isinstance(max_output_tokens, bool)
        or not isinstance(max_output_tokens, int)
        or not 1 <= max_output_tokens <= MAX_OUTPUT_TOKENS_LIMIT
    ):
        errors["max_output_tokens"] = [
            f"Max output tokens must be a whole number from 1 to {MAX_OUTPUT_TOKENS_LIMIT}."
        ]
    if errors:
        raise ValidationError(errors)


_UNSET = object()


@transaction.atomic
def participant_update_model(*, participant: Participant, **changes: object) -> Participant:
    """Change a participant's model (id, base URL, key, timeout, window) and sampling
    settings (the next step uses them). Checked without a network here; the API asks
    the server first (`providers.provider_check_or_400`). The key is never shown, so a
    blank one keeps the stored key; ``None`` clears it."""
    allowed = {*PROVIDER_FIELDS, "temperature", "max_output_tokens"}
    unknown = set(changes) - allowed
    if unknown:
        raise ValidationError({key: ["This field cannot be changed."] for key in sorted(unknown)})
    if changes.get("api_key") == "":
        changes.pop("api_key")  # never echoed, so never sent back: keep the stored one
    elif "api_key" in changes and changes["api_key"] is None:
        changes["api_key"] = ""
    merged = {name: getattr(participant, name) for name in allowed}
    merged.update(changes)
    clean_model_settings(
        temperature=changes.get("temperature"), max_output_tokens=changes.get("max_output_tokens")
    )
    cleaned = clean_provider_fields(
        **{name: merged[name] for name in PROVIDER_FIELDS},
        max_output_tokens=merged["max_output_tokens"],
    )
    for name in PROVIDER_FIELDS:
        if name in changes:
            changes[name] = cleaned[name]
    if "temperature" in changes and changes["temperature"] is not None:
        changes["temperature"] = float(changes["temperature"])
    for name, value in changes.items():
        setattr(participant, name, value)
    if changes:
        participant.save(update_fields=list(changes))
    return participant


def participant_fields(
    *,
    role: str,
    kind: str = Participant.Kind.PLAYER,
    model: str = "human",
    bio: str = "",
    identity: str = "",
    secret: str = "",
    reveal_round: int | None = None,
    order: int | None = None,
    user=None,
    temperature: float | None = None,
    max_output_tokens: int | None = None,
    base_url: str = "",
    api_key: str = "",
    timeout_s: int | None = None,
    context_window: int | None = None,
) -> dict:
    """A participant's fields, cleaned as `participant_create` stores them (no database
    read: whether the role is taken is checked when they are written; no network: the
    API asks the model's server before)."""
    role = clean_role_name(role)
    clean_model_settings(temperature=temperature, max_output_tokens=max_output_tokens)
    if kind not in PARTICIPANT_KINDS:
        raise ValidationError({"kind": [f"Kind must be one of {', '.join(PARTICIPANT_KINDS)}."]})
    if reveal_round is not None:
        clean_round(reveal_round, field="reveal_round")
    if order is not None and (
        isinstance(order, bool) or not isinstance(order, int) or not 0 <= order <= MAX_ORDER
    ):
        raise ValidationError({"order": [f"Order must be a whole number from 0 to {MAX_ORDER}."]})
    provider = clean_provider_fields(
        model=model,
        base_url=base_url,
        api_key=api_key,
        timeout_s=timeout_s,
        context_window=context_window,
        max_output_tokens=max_output_tokens,
    )
    return {
        "role": role,
        "kind": kind,
        **provider,
        "bio": bio or "",
        "identity": identity or "",
        "secret": secret or "",
        "reveal_round": reveal_round,
        "order": order,
        "user": user,
        "temperature": temperature,
        "max_output_tokens": max_output_tokens,
    }


def role_taken(role: str) -> ValidationError:
    return ValidationError({"role": [f"Role {role!r} already exists in this experiment."]})


@transaction.atomic
def participant_create(*, experiment: Experiment, **fields) -> Participant:
    """One participant (see `participant_fields` for what can be given); ``order``
    defaults to after the experiment's others."""
    cleaned = participant_fields(**fields)
    _lock_roles(experiment, [cleaned["role"]])
    if cleaned["order"] is None:
        cleaned["order"] = experiment.participants.count()
    return Participant.objects.create(experiment=experiment, **cleaned)


@transaction.atomic
def participants_create(*, experiment: Experiment, cleaned: list[dict]) -> list[Participant]:
    """Several participants in one INSERT (an import): each from `participant_fields`
    with its ``order`` given, no two with one role."""
    _lock_roles(experiment, [fields["role"] for fields in cleaned])
    return Participant.objects.bulk_create(
        [Participant(experiment=experiment, **fields) for fields in cleaned]
    )


def _lock_roles(experiment: Experiment, roles: list[str]) -> None:
    # Lock the experiment so two concurrent creates of one role fail cleanly, not with 500.
    Experiment.objects.select_for_update().filter(pk=experiment.pk).first()
    taken = set(experiment.participants.filter(role__in=roles).values_list("role", flat=True))
    for role in roles:  # the first taken, in the caller's order
        if role in taken:
            raise role_taken(role)


# The console's setup pages (issue 24): the whole participant, and a campaign's copy. ------

EDITABLE_PARTICIPANT_FIELDS = (
    "role",
    "kind",
    "model",
    "bio",
    "identity",
    "secret",
    "reveal_round",
    "order",
    "temperature",
    "max_output_tokens",
    "base_url",
    "api_key",
    "timeout_s",
    "context_window",
)


def participant_history(participant: Participant) -> bool:
    """Whether the log names this role: it spoke, or a turn's audience holds it. Such a
    role keeps its name (turns, digests and lore audiences refer to it by name)."""
    turns = Turn.objects.filter(experiment_id=participant.experiment_id)
    quoted = json.dumps(participant.role)  # as stored in the visibility list
    return (
        turns.filter(speaker=participant.role).exists()
        or turns.filter(visibility__icontains=quoted).exists()
    )


@transaction.atomic
def participant_update(*, participant: Participant, **changes) -> Participant:
    """Edit any field of a participant (the console's cast page). Cleaned by
    `participant_fields`, exactly as `participant_create` cleans them; a role with history
    (`participant_history`) cannot be renamed, and a new name must be free."""
    unknown = set(changes) - set(EDITABLE_PARTICIPANT_FIELDS)
    if unknown:
        raise ValidationError({key: ["This field cannot be changed."] for key in sorted(unknown)})
    current = {name: getattr(participant, name) for name in EDITABLE_PARTICIPANT_FIELDS}
    cleaned = participant_fields(**{**current, **changes})
    cleaned.pop("user")
    if cleaned["order"] is None:
        cleaned["order"] = participant.order
    if cleaned["role"] != participant.role:
        if participant_history(participant):
            raise ValidationError(
                {"role": [f"{participant.role} is in the log already; its name cannot change."]}
            )
        _lock_roles(participant.experiment, [cleaned["role"]])
    if cleaned["temperature"] is not None:
        cleaned["temperature"] = float(cleaned["temperature"])
    changed = [name for name, value in cleaned.items() if getattr(participant, name) != value]
    for name in changed:
        setattr(participant, name, cleaned[name])
    if changed:
        participant.save(update_fields=changed)
    return participant


@transaction.atomic
def participant_delete(*, participant: Participant) -> None:
    """Remove a participant who has no history yet (a set-up mistake). One with turns is
    refused: the log, its digests and whispers would name a role that no longer exists."""
    if participant_history(participant):
        raise ValidationError(
            {
                "participant": [
                    f"{participant.role} is in the log already and cannot be removed; "
                    "set its model to 'human' and leave the seat empty instead."
                ]
            }
        )
    participant.delete()


def budgets_for_total(budgets: dict | None, total: object) -> dict[str, int]:
    """The section budgets scaled to ``total`` tokens, each keeping its share (rounding
    goes to the largest section), so one number sets the whole pack's size. The result is
    validated with the rest of the config by `clean_config`."""
    if isinstance(total, bool) or not isinstance(total, int) or total < 0:
        raise ValidationError({"config.budgets": ["The total budget is a whole number of tokens."]})
    current = {**DEFAULT_BUDGETS, **(budgets or {})}
    weights = current if any(current.values()) else dict.fromkeys(current, 1)
    whole = sum(weights.values())
    scaled = {name: total * weight // whole for name, weight in weights.items()}
    largest = max(weights, key=lambda name: (weights[name], name))
    scaled[largest] += total - sum(scaled.values())
    return scaled


@transaction.atomic
def experiment_duplicate(*, source: Experiment, owner, name: str | None = None) -> Experiment:
    """A new draft campaign from ``source``'s setup: hook, rules, config and cast (seats
    left empty, secrets kept), and no turns, lore or memory."""
    experiment = experiment_create(
        name=name if name is not None else f"Copy of {source.name}"[:200],
        hook=source.hook,
        rules=source.rules,
        config=dict(source.config or {}),
        owner=owner,
    )
    cast = [
        participant_fields(
            **{name: getattr(p, name) for name in EDITABLE_PARTICIPANT_FIELDS if name != "order"},
            order=index,
        )
        for index, p in enumerate(source.participants.order_by("order", "id"))
    ]
    if cast:
        participants_create(experiment=experiment, cleaned=cast)
    return experiment
