"""Transcript import and export (SPEC §8): a lossless, byte-stable round trip.

Format::

    {"format": "babel-transcript/1",
     "experiment": {name, hook, rules, config, status},
     "participants": [{role, kind, model, bio, identity, secret, reveal_round, order}],
     "turns": [{round, speaker, kind, content, visibility, tags, hinge[, needs_review]}],
     "lore": [{term, category, definition, audience, status, origin, locked,
               first_seen_round, last_seen_round, mention_count,
               valid_from_round, invalid_from_round, source_turns: [turn index, …]}],
     "facts": [{id, round, audience, answer: [str, …], question}]}   (optional, the Arena's)

Turns are listed in seq order; a turn's index in the list (0-based) is how lore points
at its sources. Import runs in one transaction: a bad file stores nothing, and the error
names the element and field, e.g. ``turns[3].visibility``.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.utils import timezone

from campaigns.models import Experiment, LoreEntry, LoreRevision, Participant, Turn
from campaigns.services.experiments import experiment_create, participant_create
from campaigns.services.facts import facts_export, facts_import
from campaigns.services.turns import turn_fields
from campaigns.services.validation import (
    clean_round,
    clean_visibility,
    max_content_chars,
    prefix_errors,
)
from context_engine import tokens
from context_engine.visibility import audience_key

FORMAT = "babel-transcript/1"
_TOP_KEYS = {"format", "experiment", "participants", "turns", "lore", "facts"}
_EXPERIMENT_KEYS = {"name", "hook", "rules", "config", "status"}
_PARTICIPANT_KEYS = {"role", "kind", "model", "bio", "identity", "secret", "reveal_round", "order"}
_TURN_KEYS = {"round", "speaker", "kind", "content", "visibility", "tags", "hinge", "needs_review"}
_LORE_KEYS = {
    "term",
    "category",
    "definition",
    "audience",
    "status",
    "origin",
    "locked",
    "first_seen_round",
    "last_seen_round",
    "mention_count",
    "valid_from_round",
    "invalid_from_round",
    "source_turns",
}
_LORE_INT_KEYS = ("first_seen_round", "last_seen_round", "mention_count")
_LORE_OPTIONAL_INT_KEYS = ("valid_from_round", "invalid_from_round")


# --- export ----------------------------------------------------------------------------


def export_transcript(*, experiment: Experiment) -> dict[str, Any]:
    """The whole experiment as a transcript dict (owner's view: everything)."""
    turns = list(experiment.turns.order_by("seq"))
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
                "term": entry.term,
                "category": entry.category,
                "definition": entry.definition,
                "audience": entry.audience,
                "status": entry.status,
                "origin": entry.origin,
                "locked": entry.locked,
                "first_seen_round": entry.first_seen_round,
                "last_seen_round": entry.last_seen_round,
                "mention_count": entry.mention_count,
                "valid_from_round": entry.valid_from_round,
                "invalid_from_round": entry.invalid_from_round,
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
    return transcript


def _export_turn(turn: Turn) -> dict[str, Any]:
    data = {
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


# --- import ----------------------------------------------------------------------------


def loads(text: str | bytes) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValidationError({"transcript": [f"Not valid JSON: {exc}"]}) from None
    except RecursionError:
        raise ValidationError({"transcript": ["Not valid JSON: nested too deeply."]}) from None
    return data


@transaction.atomic
def import_transcript(*, data: object, owner=None) -> Experiment:
    """Create a new experiment from a transcript. All or nothing."""
    if not isinstance(data, dict):
        raise ValidationError({"transcript": ["A transcript is a JSON object."]})
    _reject_unknown(data, _TOP_KEYS, "")
    if data.get("format", FORMAT) != FORMAT:
        raise ValidationError({"format": [f"Unsupported format; expected {FORMAT!r}."]})
    experiment = _import_experiment(data.get("experiment"), owner)
    roles = _import_participants(experiment, _list(data, "participants"))
    dm_roles = tuple(
        experiment.participants.filter(kind=Participant.Kind.DM).values_list("role", flat=True)
    )
    turn_ids = _import_turns(experiment, roles, dm_roles, _list(data, "turns"))
    _import_lore(experiment, roles, turn_ids, _list(data, "lore", required=False))
    facts_import(experiment=experiment, roles=roles, items=_list(data, "facts", required=False))
    # The clock stands at the transcript's last round (an import is the DM side's act);
    # every turn was validated above, so each has a whole-number round.
    experiment.current_round = max((item["round"] for item in data["turns"]), default=0)
    Experiment.objects.filter(pk=experiment.pk).update(current_round=experiment.current_round)
    return experiment


def _list(data: dict, key: str, *, required: bool = True) -> list:
    value = data.get(key, None if required else [])
    if not isinstance(value, list):
        raise ValidationError({key: ["Must be a list."]})
    return value


def _reject_unknown(item: dict, allowed: set[str], prefix: str) -> None:
    unknown = sorted(set(item) - allowed)
    if unknown:
        raise ValidationError({f"{prefix}{key}": ["Unknown field."] for key in unknown})


def _import_experiment(item: object, owner) -> Experiment:
    if not isinstance(item, dict):
        raise ValidationError({"experiment": ["Must be an object with at least a name."]})
    _reject_unknown(item, _EXPERIMENT_KEYS, "experiment.")
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


def _import_participants(experiment: Experiment, items: list) -> set[str]:
    for index, item in enumerate(items):
        prefix = f"participants[{index}]."
        if not isinstance(item, dict):
            raise ValidationError({prefix.rstrip("."): ["Must be an object."]})
        _reject_unknown(item, _PARTICIPANT_KEYS, prefix)
        try:
            participant_create(
                experiment=experiment,
                role=item.get("role"),
                kind=item.get("kind", Participant.Kind.PLAYER),
                model=item.get("model", "human"),
                bio=_text(item, "bio", prefix),
                identity=_text(item, "identity", prefix),
                secret=_text(item, "secret", prefix),
                reveal_round=item.get("reveal_round"),
                order=item.get("order", index),
            )
        except ValidationError as exc:
            raise prefix_errors(exc, prefix) from None
    return set(experiment.participants.values_list("role", flat=True))


def _import_turns(
    experiment: Experiment, roles: set[str], dm_roles: tuple[str, ...], items: list
) -> list[int]:
    """Validate every turn, count all tokens in one batch, insert with one executemany.

    Returns the new turns' ids in list order. The ORM's bulk_create spent most of an
    import building model instances and compiling INSERTs (SQLite's variable limit
    makes that ~80 rows a statement); rows here are tuples.
    """
    limit = max_content_chars(experiment.config)
    # Token counting (the bulk of an import's CPU) runs beside validation: tiktoken
    # releases the GIL. A bad item raises below and the count is thrown away.
    texts = [
        item["content"] if isinstance(item, dict) and isinstance(item.get("content"), str) else ""
        for item in items
    ]
    with ThreadPoolExecutor(max_workers=1) as pool:
        counted = pool.submit(tokens.count_many, texts)
        rows = _clean_turns(roles, dm_roles, items, limit)
        counts = counted.result()
    if not rows:
        return []
    created_at = connection.ops.adapt_datetimefield_value(timezone.now())
    return _insert_turns(experiment, rows, counts, created_at)


def _clean_turns(roles, dm_roles, items: list, limit: int) -> list[tuple[dict, bool]]:
    rows = []
    for index, item in enumerate(items):
        prefix = f"turns[{index}]."
        if not isinstance(item, dict):
            raise ValidationError({prefix.rstrip("."): ["Must be an object."]})
        _reject_unknown(item, _TURN_KEYS, prefix)
        needs_review = item.get("needs_review", False)
        if not isinstance(needs_review, bool):
            raise ValidationError({f"{prefix}needs_review": ["Must be true or false."]})
        try:
            cleaned = turn_fields(
                roles=roles,
                round=item.get("round"),
                speaker=item.get("speaker"),
                kind=item.get("kind"),
                content=item.get("content"),
                visibility=item.get("visibility"),
                tags=item.get("tags"),
                hinge=item.get("hinge", False),
                content_limit=limit,
                dm_roles=dm_roles,
                count_tokens=False,
            )
        except ValidationError as exc:
            raise prefix_errors(exc, prefix) from None
        rows.append((cleaned, needs_review))
    return rows


def _insert_turns(experiment, rows, counts, created_at) -> list[int]:
    values = [
        (
            experiment.pk,
            cleaned["round"],
            seq,
            cleaned["speaker"],
            cleaned["kind"],
            cleaned["content"],
            None if cleaned["visibility"] is None else json.dumps(cleaned["visibility"]),
            json.dumps(cleaned["tags"]),
            cleaned["hinge"],
            needs_review,
            count,
            created_at,
        )
        for seq, ((cleaned, needs_review), count) in enumerate(zip(rows, counts, strict=True), 1)
    ]
    with connection.cursor() as cursor, _fts_deferred(cursor, experiment.pk):
        if connection.vendor == "postgresql":
            # COPY: one statement (so the statement-level pack_version trigger runs once,
            # not once per row as with executemany) and the fastest bulk path there is.
            with cursor.cursor.copy(_COPY_TURNS) as copy:
                for row in values:
                    copy.write_row(row)
        else:
            cursor.executemany(_INSERT_TURN, values)
        cursor.execute(
            "SELECT id FROM campaigns_turn WHERE experiment_id = %s ORDER BY seq", [experiment.pk]
        )
        return [row[0] for row in cursor.fetchall()]


_INSERT_TURN = (
    "INSERT INTO campaigns_turn (experiment_id, round, seq, speaker, kind, content, "
    "visibility, tags, hinge, needs_review, tokens, created_at) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
)
_COPY_TURNS = (
    "COPY campaigns_turn (experiment_id, round, seq, speaker, kind, content, visibility, "
    "tags, hinge, needs_review, tokens, created_at) FROM STDIN"
)
_FTS_TRIGGER = "campaigns_turn_fts_ai"


@contextmanager
def _fts_deferred(cursor, experiment_id: int):
    """SQLite: index the imported turns for full-text search in one statement.

    The per-row trigger inserts in descending FTS rowid order (migration 0008), which
    makes FTS5 flush on every row. Inside this transaction the trigger is dropped, the
    experiment's rows are indexed in ascending rowid order, and the trigger is recreated
    from its own stored SQL; a failure rolls all of it back together. (SQLite takes one
    writer at a time, so no other connection can insert a turn meanwhile.)
    """
    if connection.vendor != "sqlite":
        yield
        return
    cursor.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = %s", [_FTS_TRIGGER]
    )
    found = cursor.fetchone()
    if found is None:  # no full-text table (not migrated this far): nothing to keep in sync
        yield
        return
    cursor.execute(f"DROP TRIGGER {_FTS_TRIGGER}")
    yield
    cursor.execute(
        "INSERT INTO campaigns_turn_fts(rowid, body) SELECT -id, 'xexp' || experiment_id || "
        "' ' || content FROM campaigns_turn WHERE experiment_id = %s ORDER BY id DESC",
        [experiment_id],
    )
    cursor.execute(found[0])


def _import_lore(experiment: Experiment, roles: set[str], turn_ids: list[int], items: list) -> None:
    """Validate every entry, then three bulk inserts: entries, source links, revisions."""
    from context_engine.memory.extraction import merge_key

    entries, sources_of, seen = [], [], set()
    for index, item in enumerate(items):
        prefix = f"lore[{index}]."
        if not isinstance(item, dict):
            raise ValidationError({prefix.rstrip("."): ["Must be an object."]})
        _reject_unknown(item, _LORE_KEYS, prefix)
        fields = _lore_fields(item, roles, len(turn_ids), prefix)
        sources = fields.pop("source_turns")
        key = merge_key(fields["term"])
        if (key, fields["audience_key"]) in seen:
            raise ValidationError({f"{prefix}term": ["Duplicate term for the same audience."]})
        seen.add((key, fields["audience_key"]))
        entries.append(LoreEntry(experiment=experiment, key=key, **fields))
        sources_of.append(sources)
    if not entries:
        return
    LoreEntry.objects.bulk_create(entries, batch_size=500)
    if any(entry.pk is None for entry in entries):  # pragma: no cover - both vendors return ids
        raise RuntimeError("bulk_create did not return lore ids")
    Through = LoreEntry.source_turns.through
    Through.objects.bulk_create(
        [
            Through(loreentry_id=entry.pk, turn_id=turn_ids[i])
            for entry, sources in zip(entries, sources_of, strict=True)
            for i in sources
        ],
        batch_size=1000,
    )
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
    for key in _LORE_INT_KEYS:
        value = item.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValidationError({f"{prefix}{key}": ["Must be a whole number ≥ 0."]})
        if key.endswith("_round"):
            clean_round(value, field=f"{prefix}{key}")
        fields[key] = value
    for key in _LORE_OPTIONAL_INT_KEYS:
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
