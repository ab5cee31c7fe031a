"""Import: validate a whole transcript, then write it in one transaction."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connection, transaction

from campaigns.models import Experiment, LoreEntry, LoreRevision, Participant
from campaigns.services.experiments import (
    experiment_create,
    participant_fields,
    participants_create,
    role_taken,
)
from campaigns.services.facts import facts_import
from campaigns.services.questions import questions_import
from campaigns.services.transcripts.cleaning import TurnCleaner, clean_turns
from campaigns.services.transcripts.common import (
    EXPERIMENT_KEYS,
    FORMAT,
    LORE_INT_KEYS,
    LORE_KEYS,
    LORE_OPTIONAL_INT_KEYS,
    PARTICIPANT_KEYS,
    TOP_KEYS,
    gc_paused,
    reject_unknown,
)
from campaigns.services.transcripts.writes import counting, pg_insert, sqlite_insert, turn_texts
from campaigns.validation import (
    clean_round,
    clean_visibility,
    max_content_chars,
    prefix_errors,
)
from context_engine.visibility import audience_key


def loads(text: str | bytes) -> dict[str, Any]:
    try:
        with gc_paused():
            data = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValidationError({"transcript": [f"Not valid JSON: {exc}"]}) from None
    except RecursionError:
        raise ValidationError({"transcript": ["Not valid JSON: nested too deeply."]}) from None
    return data


def import_transcript(*, data: object, owner=None) -> Experiment:
    """Create a new experiment from a transcript. All or nothing."""
    with gc_paused(), transaction.atomic():
        return _import(data, owner)


def _import(data: object, owner) -> Experiment:
    if not isinstance(data, dict):
        raise ValidationError({"transcript": ["A transcript is a JSON object."]})
    reject_unknown(data, TOP_KEYS, "")
    if data.get("format", FORMAT) != FORMAT:
        raise ValidationError({"format": [f"Unsupported format; expected {FORMAT!r}."]})
    experiment = _import_experiment(data.get("experiment"), owner)
    participants = _import_participants(experiment, _list(data, "participants"))
    roles = {participant.role for participant in participants}
    dm_roles = tuple(
        participant.role for participant in participants if participant.kind == Participant.Kind.DM
    )
    items = _list(data, "turns")
    cleaner = TurnCleaner(roles, dm_roles, max_content_chars(experiment.config))
    lore = _LoreImport(experiment, roles, len(items), lambda: _list(data, "lore", required=False))
    turn_ids = _import_turns(experiment, cleaner, items, lore.write_entries)
    lore.write_sources(turn_ids)
    facts_import(experiment=experiment, roles=roles, items=_list(data, "facts", required=False))
    # The clock stands at the transcript's last round (an import is the DM side's act);
    # every turn was validated above, so each has a whole-number round.
    experiment.current_round = max((item["round"] for item in data["turns"]), default=0)
    questions_import(
        experiment=experiment,
        roles=roles,
        items=_list(data, "questions", required=False),
        turn_keys=cleaner.keys,
        turn_ids=turn_ids,
        last_round=experiment.current_round,
    )
    Experiment.objects.filter(pk=experiment.pk).update(current_round=experiment.current_round)
    return experiment


def _list(data: dict, key: str, *, required: bool = True) -> list:
    value = data.get(key, None if required else [])
    if not isinstance(value, list):
        raise ValidationError({key: ["Must be a list."]})
    return value


def _import_experiment(item: object, owner) -> Experiment:
    if not isinstance(item, dict):
        raise ValidationError({"experiment": ["Must be an object with at least a name."]})
    reject_unknown(item, EXPERIMENT_KEYS, "experiment.")
    try:
        return experiment_create(
            name=item.get("name"),
            hook=_text(item, "hook", "experiment."),
            rules=_text(item, "rules", "experiment."),
            config=item.get("config") or {},
            owner=owner,
            status=item.get("status", Experiment.Status.DRAFT),
        )
    except ValidationError as exc:
        raise prefix_errors(exc, "experiment.") from None


def _text(item: dict, key: str, prefix: str) -> str:
    value = item.get(key, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValidationError({f"{prefix}{key}": ["Must be a string."]})
    return value


def _import_participants(experiment: Experiment, items: list) -> list[Participant]:
    """Every participant validated as `participant_create` does, then one INSERT."""
    cleaned: list[dict] = []
    seen: set[str] = set()
    for index, item in enumerate(items):
        prefix = f"participants[{index}]."
        if not isinstance(item, dict):
            raise ValidationError({prefix.rstrip("."): ["Must be an object."]})
        reject_unknown(item, PARTICIPANT_KEYS, prefix)
        try:
            fields = participant_fields(
                role=item.get("role"),
                kind=item.get("kind", Participant.Kind.PLAYER),
                model=item.get("model", "human"),
                bio=_text(item, "bio", prefix),
                identity=_text(item, "identity", prefix),
                secret=_text(item, "secret", prefix),
                reveal_round=item.get("reveal_round"),
                order=item.get("order", index),
            )
            if fields["role"] in seen:
                raise role_taken(fields["role"])
        except ValidationError as exc:
            raise prefix_errors(exc, prefix) from None
        seen.add(fields["role"])
        cleaned.append(fields)
    return participants_create(experiment=experiment, cleaned=cleaned)


def _import_turns(
    experiment: Experiment,
    cleaner: TurnCleaner,
    items: list,
    validated: Callable[[], None],
) -> Sequence[int]:
    """Validate every turn, then write them all, chunk by chunk as their tokens are counted.

    Returns the new turns' ids in list order. Token counting is the floor of an
    import's cost; the rest is arranged around it. Counting starts first, in helper
    processes (`writes.counting`), while this thread validates, formats and writes,
    and counts itself whatever no helper has started when it needs it. A bad turn raises
    before any turn row is written, and the caller's transaction rolls back whatever was.

    - PostgreSQL: each chunk as COPY text; the server stores chunk k while Python
      formats chunk k+1.
    - SQLite: each chunk of turns is inserted as soon as its counts are in, with ids
      assigned here.

    Either way the turns' search rows are left to the indexing task after commit
    (`index_imported_turns`).

    ``validated()`` runs once every turn has validated and before the first turn row is
    written: the lore's entries are written there, while the helpers count. ``cleaner``
    keeps the turn keys it saw (``cleaner.keys``: key → index) for the questions.
    """
    if not items:
        return []
    texts = turn_texts(items)
    counts = counting(texts)
    if connection.vendor == "postgresql":
        rows = clean_turns(cleaner, items)
        validated()
        return pg_insert(experiment.pk, rows, counts)
    return sqlite_insert(
        experiment.pk, texts, counts, lambda: clean_turns(cleaner, items), validated
    )


class _LoreImport:
    """The transcript's lore: every entry validated, then three bulk inserts (entries,
    revisions, and links to their source turns).

    The entries and revisions need no turn ids: on PostgreSQL they are written before the
    turns' COPY, while the helpers count tokens; the links, which do, after it. The
    list is read only when the turns have validated, so a bad turn is the error
    reported first either way.
    """

    def __init__(self, experiment: Experiment, roles: set[str], turn_count: int, items_of):
        self.experiment, self.roles, self.turn_count = experiment, roles, turn_count
        self.items_of = items_of
        self.entries: list[LoreEntry] | None = None
        self.sources_of: list[list[int]] = []

    def write_entries(self) -> None:
        from context_engine.memory.extraction import merge_key

        if self.entries is not None:
            return
        entries, seen = [], set()
        for index, item in enumerate(self.items_of()):
            prefix = f"lore[{index}]."
            if not isinstance(item, dict):
                raise ValidationError({prefix.rstrip("."): ["Must be an object."]})
            reject_unknown(item, LORE_KEYS, prefix)
            fields = _lore_fields(item, self.roles, self.turn_count, prefix)
            sources = fields.pop("source_turns")
            key = merge_key(fields["term"])
            if (key, fields["audience_key"]) in seen:
                raise ValidationError({f"{prefix}term": ["Duplicate term for the same audience."]})
            seen.add((key, fields["audience_key"]))
            entries.append(LoreEntry(experiment=self.experiment, key=key, **fields))
            self.sources_of.append(sources)
        self.entries = entries
        if not entries:
            return
        LoreEntry.objects.bulk_create(entries, batch_size=500)
        if any(entry.pk is None for entry in entries):  # pragma: no cover - both return ids
            raise RuntimeError("bulk_create did not return lore ids")
        LoreRevision.objects.bulk_create(
            [
                LoreRevision(
                    entry=entry,
                    actor="import",
                    changes={"definition": ["", entry.definition], "status": ["", entry.status]},
                )
                for entry in entries
            ],
            batch_size=500,
        )

    def write_sources(self, turn_ids: Sequence[int]) -> None:
        self.write_entries()
        links = [
            (entry.pk, turn_ids[i])
            for entry, sources in zip(self.entries, self.sources_of, strict=True)
            for i in sources
        ]
        if not links:
            return
        Through = LoreEntry.source_turns.through
        Through.objects.bulk_create(
            [Through(loreentry_id=entry_id, turn_id=turn_id) for entry_id, turn_id in links],
            batch_size=1000,
        )


def _lore_fields(item: dict, roles: set[str], turn_count: int, prefix: str) -> dict:
    term = item.get("term")
    if not isinstance(term, str) or not term.strip() or len(term) > 200:
        raise ValidationError({f"{prefix}term": ["A term is a non-empty string (≤ 200 chars)."]})
    choices = {
        "category": LoreEntry.Category.values,
        "status": LoreEntry.Status.values,
        "origin": LoreEntry.Origin.values,
    }
    defaults = {"category": "term", "status": "proposed", "origin": "extracted"}
    fields: dict[str, Any] = {"term": term.strip(), "definition": _text(item, "definition", prefix)}
    for key, allowed in choices.items():
        value = item.get(key, defaults[key])
        if value not in allowed:
            raise ValidationError({f"{prefix}{key}": [f"Must be one of {', '.join(allowed)}."]})
        fields[key] = value
    locked = item.get("locked", False)
    if not isinstance(locked, bool):
        raise ValidationError({f"{prefix}locked": ["Must be true or false."]})
    fields["locked"] = locked
    for key in LORE_INT_KEYS:
        value = item.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValidationError({f"{prefix}{key}": ["Must be a whole number ≥ 0."]})
        if key.endswith("_round"):
            clean_round(value, field=f"{prefix}{key}")
        fields[key] = value
    for key in LORE_OPTIONAL_INT_KEYS:
        value = item.get(key)
        fields[key] = None if value is None else clean_round(value, field=f"{prefix}{key}")
    if (
        fields["valid_from_round"] is not None
        and fields["invalid_from_round"] is not None
        and fields["invalid_from_round"] < fields["valid_from_round"]
    ):
        raise ValidationError(
            {f"{prefix}invalid_from_round": ["Must not precede valid_from_round."]}
        )
    audience = clean_visibility(item.get("audience"), roles, field=f"{prefix}audience")
    fields["audience"] = audience
    fields["audience_key"] = audience_key(None if audience is None else tuple(audience))
    sources = item.get("source_turns", [])
    if not isinstance(sources, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) and 0 <= i < turn_count for i in sources
    ):
        raise ValidationError(
            {
                f"{prefix}source_turns": [
                    f"Must be a list of turn indexes from 0 to {turn_count - 1}."
                ]
            }
        )
    fields["source_turns"] = sorted(set(sources))
    return fields
