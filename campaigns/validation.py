"""Input validation shared by every writer (API, admin, importer, console).

Each function raises django's ValidationError keyed by the field it checks, so every
caller can answer 400 naming the field. Visibility is validated here, in one place,
against the experiment's roles.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.core.exceptions import ValidationError

from context_engine.llm.providers import FORMS, clean_base_url, is_known_model_id
from context_engine.types import DEFAULT_BUDGETS, STRATEGIES, TURN_KINDS
from context_engine.visibility import ROLE_PATTERN, VisibilityError, validate_visibility

MAX_TAGS = 50
MAX_TAG_LENGTH = 100
RETRIEVAL_PRESETS = ("minimal", "standard", "deep")
HUMAN_TIMEOUT_POLICIES = ("skip", "narrate")  # see campaigns.services.relay

# config key → (type, minimum, maximum) for integers; booleans and strings handled below.
_INT_KEYS: dict[str, tuple[int, int]] = {
    "hot_window_rounds": (1, 50),
    "hinge_quota": (0, 50),
    "hinge_ttl_rounds": (0, 1000),
    "memory_interval": (1, 100),
    "max_content_chars": (1, 10_000_000),
    "window_turns": (1, 500),
    "human_timeout_s": (10, 7 * 24 * 3600),  # a human's turn: 10 s to a week
}
TIERS = ("hot", "warm", "cold")
_BOOL_KEYS = ("lend_unused_budget", "show_whisper_existence", "offline_agent_tools")
# The memory workers' models: one field each, with the participants' presets
# (context_engine.llm.providers); ``memory_model`` is the default for all three.
MODEL_KEYS = ("memory_model", "summarizer_model", "hydrator_model", "definer_model")
_URL_KEYS = ("memory_base_url",)  # the memory workers' server, when not the preset's
CONFIG_DEFAULTS: dict[str, object] = {
    "strategy": "layered",
    "budgets": dict(DEFAULT_BUDGETS),
    "hot_window_rounds": 4,
    "hinge_quota": 3,
    "hinge_ttl_rounds": 10,
    "retrieval_preset": "standard",
    "memory_interval": 4,
    "lend_unused_budget": True,  # shares, not walls (SPEC §5)
    "show_whisper_existence": False,
    "window_turns": 12,
    "tier_budgets": {},
}


def clean_visibility(value: object, roles: Iterable[str], *, field: str = "visibility"):
    """Normalised visibility (None or a sorted list) or ValidationError naming ``field``."""
    try:
        normalised = validate_visibility(value, roles)
    except VisibilityError as exc:
        raise ValidationError({field: [exc.message]}) from None
    return None if normalised is None else list(normalised)


def clean_role_name(role: object, *, field: str = "role") -> str:
    if not isinstance(role, str) or not ROLE_PATTERN.match(role):
        raise ValidationError(
            {
                field: [
                    "A role is 1–64 letters, digits, spaces or _ . ' - and starts with a "
                    "letter or digit."
                ]
            }
        )
    return role


def clean_speaker(speaker: object, roles: Iterable[str], *, field: str = "speaker") -> str:
    known = set(roles)
    if not isinstance(speaker, str) or speaker not in known:
        raise ValidationError(
            {field: [f"Unknown speaker {speaker!r}; roles are: {', '.join(sorted(known))}."]}
        )
    return speaker


def clean_kind(kind: object, *, field: str = "kind") -> str:
    if kind not in TURN_KINDS:
        raise ValidationError(
            {field: [f"Unknown kind {kind!r}; kinds are: {', '.join(TURN_KINDS)}."]}
        )
    return kind  # type: ignore[return-value]


def clean_round(value: object, *, field: str = "round") -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError({field: ["Round must be a whole number (0 = setup)."]})
    if value < 0:
        raise ValidationError({field: ["Round must be 0 or more."]})
    if value > settings.BABEL_MAX_ROUND:
        raise ValidationError({field: [f"Round must be at most {settings.BABEL_MAX_ROUND}."]})
    return value


def max_content_chars(config: dict | None = None) -> int:
    if config and isinstance(config.get("max_content_chars"), int):
        return config["max_content_chars"]
    return settings.BABEL_MAX_CONTENT_CHARS


def clean_content(value: object, *, limit: int, field: str = "content") -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError({field: ["Content must be a non-empty string."]})
    if len(value) > limit:
        raise ValidationError(
            {field: [f"Content is {len(value)} characters; the limit is {limit}."]}
        )
    return value


def clean_tags(value: object, *, field: str = "tags") -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValidationError({field: ["Tags must be a list of strings like 'npc:Vane'."]})
    if len(value) > MAX_TAGS:
        raise ValidationError({field: [f"At most {MAX_TAGS} tags."]})
    tags: list[str] = []
    for tag in value:
        if not isinstance(tag, str) or not tag.strip() or len(tag) > MAX_TAG_LENGTH:
            raise ValidationError(
                {field: [f"Each tag is a non-empty string of at most {MAX_TAG_LENGTH} characters."]}
            )
        if tag not in tags:
            tags.append(tag)
    return tags


def clean_config(value: object, *, field: str = "config") -> dict:
    """Validate an experiment's config; unknown keys and bad values name their path."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValidationError({field: ["Config must be an object."]})
    errors: dict[str, list[str]] = {}
    known = {
        "strategy",
        "budgets",
        "tier_budgets",
        "retrieval_preset",
        "human_timeout_policy",
        *_INT_KEYS,
        *_BOOL_KEYS,
        *MODEL_KEYS,
        *_URL_KEYS,
    }
    for key in sorted(value):
        path = f"{field}.{key}"
        item = value[key]
        if key not in known:
            errors[path] = [f"Unknown config key {key!r}; known keys: {', '.join(sorted(known))}."]
        elif key == "strategy" and item not in STRATEGIES:
            errors[path] = [f"Unknown strategy {item!r}; strategies: {', '.join(STRATEGIES)}."]
        elif key == "retrieval_preset" and item not in RETRIEVAL_PRESETS:
            errors[path] = [f"Retrieval preset must be one of {', '.join(RETRIEVAL_PRESETS)}."]
        elif key == "human_timeout_policy" and item not in HUMAN_TIMEOUT_POLICIES:
            errors[path] = [
                f"human_timeout_policy must be one of {', '.join(HUMAN_TIMEOUT_POLICIES)}."
            ]
        elif key in _INT_KEYS:
            low, high = _INT_KEYS[key]
            if isinstance(item, bool) or not isinstance(item, int) or not low <= item <= high:
                errors[path] = [f"{key} must be a whole number from {low} to {high}."]
        elif key in _BOOL_KEYS and not isinstance(item, bool):
            errors[path] = [f"{key} must be true or false."]
        elif key in MODEL_KEYS and (
            not isinstance(item, str) or len(item) > 100 or not is_known_model_id(item)
        ):
            errors[path] = [f"{key} must be a model id: {FORMS}."]
        elif key in _URL_KEYS:
            try:
                clean_base_url(item)
            except ValueError as exc:
                errors[path] = [str(exc)]
        elif key == "budgets":
            errors.update(_budget_errors(item, path, DEFAULT_BUDGETS))
        elif key == "tier_budgets":
            errors.update(_budget_errors(item, path, TIERS))
    if errors:
        raise ValidationError(errors)
    return dict(value)


def _budget_errors(budgets: object, path: str, names) -> dict[str, list[str]]:
    if not isinstance(budgets, dict):
        return {path: ["Budgets must be an object of name → tokens."]}
    errors: dict[str, list[str]] = {}
    for section, tokens in budgets.items():
        if section not in names:
            errors[f"{path}.{section}"] = [f"Unknown name {section!r}; known: {', '.join(names)}."]
        elif (
            isinstance(tokens, bool) or not isinstance(tokens, int) or not 0 <= tokens <= 1_000_000
        ):
            errors[f"{path}.{section}"] = [
                "A budget is a whole number of tokens from 0 to 1000000."
            ]
    return errors


def effective_config(config: dict | None) -> dict:
    """Stored config over the defaults (budgets merged per section)."""
    merged = {**CONFIG_DEFAULTS, **(config or {})}
    merged["budgets"] = {**DEFAULT_BUDGETS, **((config or {}).get("budgets") or {})}
    return merged


def prefix_errors(error: ValidationError, prefix: str) -> ValidationError:
    """Re-key a ValidationError's fields under ``prefix`` (e.g. ``turns[3].``)."""
    if hasattr(error, "error_dict"):
        return ValidationError(
            {
                f"{prefix}{key}": [m for e in errs for m in e.messages]
                for key, errs in error.error_dict.items()
            }
        )
    return ValidationError({prefix.rstrip("."): error.messages})


# --- JSON bodies that can be stored (the API's strict parser and the console's upload) ---
#
# JSON may spell text that no database holds: lone UTF-16 surrogates and NUL characters.
# Parsed, they would be a 500 on the way in or on every later read; they are refused
# before anything reaches a service, naming where they are (``turns[3].tags[0]``).

ROOT = "non_field_errors"


def _problem(text: str) -> str | None:
    if "\x00" in text:
        return "Text may not contain NUL characters."
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "Text may not contain unpaired surrogates."
    return None


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def too_deep(value: object, limit: int) -> bool:
    """Whether containers nest deeper than ``limit`` (walked without recursion)."""
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth >= limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


def unstorable_text(value: object, path: str = "") -> tuple[str, str] | None:
    """``(path, message)`` of the first string (value or key) no database can store."""
    stack: list[tuple[object, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            problem = _problem(item)
            if problem:
                return where or ROOT, problem
        elif isinstance(item, dict):
            for key, child in item.items():
                problem = _problem(key)
                if problem:
                    return where or ROOT, f"A key: {problem}"
                stack.append((child, _child(where, key)))
        elif isinstance(item, list):
            stack.extend((child, f"{where}[{index}]") for index, child in enumerate(item))
    return None


def nesting_error() -> str:
    return f"JSON may nest at most {settings.BABEL_MAX_JSON_DEPTH} levels deep."
