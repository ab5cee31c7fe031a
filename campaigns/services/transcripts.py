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
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.utils import timezone

from campaigns.models import Experiment, LoreEntry, LoreRevision, Participant, Turn
from campaigns.services.experiments import experiment_create, participant_create
from campaigns.services.facts import facts_export, facts_import
from campaigns.services.memory.dispatch import send_on_commit
from campaigns.services.turns import private_kinds, turn_fields
from campaigns.services.validation import (
    clean_round,
    clean_tags,
    clean_visibility,
    max_content_chars,
    prefix_errors,
)
from context_engine import tokens
from context_engine.types import TURN_KINDS
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
) -> Sequence[int]:
    """Validate every turn, then write them all, counting tokens chunk by chunk.

    Returns the new turns' ids in list order. Token counting is the floor of an
    import's cost; the writes are arranged around it. A bad turn raises before any turn
    row is written, and the caller's transaction rolls back whatever was.

    - PostgreSQL: one thread. Count a chunk, format it as COPY text, send it; the server
      stores chunk k while Python counts chunk k+1 (a counting thread would only fight
      the formatting for the GIL: tiktoken needs it back after every text).
    - SQLite: its own work runs without the GIL, so it overlaps the Python work. The
      full-text rows need neither validation nor counts (the ids are assigned here):
      they are written while the turns validate; then counting runs in a worker thread
      while each chunk of turns is inserted as soon as its counts are in.
    """
    limit = max_content_chars(experiment.config)
    if connection.vendor == "postgresql":
        rows = _clean_turns(roles, dm_roles, items, limit)
        return _pg_insert(experiment.pk, rows) if rows else []
    if not items:
        return []
    return _sqlite_insert(experiment.pk, items, lambda: _clean_turns(roles, dm_roles, items, limit))


_CHUNK = 2000  # turns counted, and written, per step


class _TurnCleaner:
    """Turn items → row tuples ``(round, speaker, kind, content, visibility JSON, tags JSON,
    hinge, needs_review)``, exactly as `turn_fields` cleans them.

    The fast path accepts only items that plainly pass every rule of `turn_fields`, and
    memoises the two costly parts, visibility (normalised, private-kind defaults, JSON)
    and tags (deduplicated, JSON), per distinct value: a transcript repeats a handful of
    audiences and tag lists. Anything else — a bad value, an odd type, a value it has not
    seen that fails — goes through `turn_fields` itself, so errors are word for word the
    same (`tests/campaigns/services/test_transcripts_fast_path.py` checks both paths agree).
    """

    _BAD = object()

    def __init__(self, roles: set[str], dm_roles: tuple[str, ...], limit: int):
        self.roles = roles
        self.dm_roles = dm_roles
        self.limit = limit
        self.max_round = settings.BABEL_MAX_ROUND
        self.kinds = frozenset(TURN_KINDS)
        self.visibility: dict[tuple, object] = {}
        self.tags: dict[tuple, object] = {None: "[]"}

    def row(self, index: int, item: object) -> tuple:
        fast = self.fast(item)
        return fast if fast is not None else self.slow(index, item)

    def fast(self, item: object) -> tuple | None:
        """The row, or None when `slow` must decide (it raises or gives the row)."""
        if type(item) is not dict or not item.keys() <= _TURN_KEYS:
            return None
        get = item.get
        round_, speaker, kind, content = get("round"), get("speaker"), get("kind"), get("content")
        hinge, needs_review = get("hinge", False), get("needs_review", False)
        if (
            type(round_) is not int
            or not 0 <= round_ <= self.max_round
            or type(speaker) is not str
            or speaker not in self.roles
            or type(kind) is not str
            or kind not in self.kinds
            or type(content) is not str
            or len(content) > self.limit
            or not content
            or content.isspace()
            or type(hinge) is not bool
            or type(needs_review) is not bool
        ):
            return None
        visibility, tags = get("visibility"), get("tags")
        if (visibility is not None and type(visibility) is not list) or (
            tags is not None and type(tags) is not list
        ):
            return None
        try:
            vis_key = (kind, speaker, None if visibility is None else tuple(visibility))
            tags_key = None if tags is None else tuple(tags)
            vis_json = self.visibility.get(vis_key, _TurnCleaner)
            tags_json = self.tags.get(tags_key, _TurnCleaner)
        except TypeError:  # an unhashable entry (a list, an object): not a well-formed turn
            return None
        if vis_json is _TurnCleaner:
            vis_json = self.visibility[vis_key] = self._visibility(kind, speaker, visibility)
        if tags_json is _TurnCleaner:
            tags_json = self.tags[tags_key] = self._tags(tags)
        if vis_json is self._BAD or tags_json is self._BAD:
            return None
        return (round_, speaker, kind, content, vis_json, tags_json, hinge, needs_review)

    def _visibility(self, kind: str, speaker: str, visibility: list | None) -> object:
        try:
            normalised = clean_visibility(visibility, self.roles)
            final = private_kinds(
                {"kind": kind, "speaker": speaker, "visibility": normalised}, self.dm_roles
            )
        except ValidationError:
            return self._BAD
        return None if final is None else json.dumps(final)

    def _tags(self, tags: list) -> object:
        try:
            return json.dumps(clean_tags(tags))
        except ValidationError:
            return self._BAD

    def slow(self, index: int, item: object) -> tuple:
        """`turn_fields` itself (the error names ``turns[index].<field>``)."""
        prefix = f"turns[{index}]."
        if not isinstance(item, dict):
            raise ValidationError({prefix.rstrip("."): ["Must be an object."]})
        _reject_unknown(item, _TURN_KEYS, prefix)
        needs_review = item.get("needs_review", False)
        if not isinstance(needs_review, bool):
            raise ValidationError({f"{prefix}needs_review": ["Must be true or false."]})
        try:
            cleaned = turn_fields(
                roles=self.roles,
                round=item.get("round"),
                speaker=item.get("speaker"),
                kind=item.get("kind"),
                content=item.get("content"),
                visibility=item.get("visibility"),
                tags=item.get("tags"),
                hinge=item.get("hinge", False),
                content_limit=self.limit,
                dm_roles=self.dm_roles,
                count_tokens=False,
            )
        except ValidationError as exc:
            raise prefix_errors(exc, prefix) from None
        visibility = cleaned["visibility"]
        return (
            cleaned["round"],
            cleaned["speaker"],
            cleaned["kind"],
            cleaned["content"],
            None if visibility is None else json.dumps(visibility),
            json.dumps(cleaned["tags"]),
            cleaned["hinge"],
            needs_review,
        )


def _clean_turns(roles, dm_roles, items: list, limit: int) -> list[tuple]:
    row = _TurnCleaner(roles, dm_roles, limit).row
    return [row(index, item) for index, item in enumerate(items)]


def _pg_insert(pk: int, rows: list[tuple]) -> Sequence[int]:
    """COPY, in text form built here (psycopg's per-row adaptation cost as much as the
    counting): one statement, so the statement-level pack_version trigger runs once.

    ``search_indexed`` false: the GIN index skips these rows until the background task
    (`index_imported_turns`, sent after commit) indexes them; searches find them anyway.
    """
    created_at = timezone.now().isoformat()
    count = tokens.count_many
    with connection.cursor() as cursor, cursor.cursor.copy(_COPY_TURNS) as copy:
        for start in range(0, len(rows), _CHUNK):
            chunk = rows[start : start + _CHUNK]
            counts = count([row[3] for row in chunk])
            lines = [
                f"{pk}\t{seq}\t{n}\t{created_at}\t{r}\t{speaker}\t{kind}\t"
                f"{_copy_text(content)}\t{vis}\t{tags}\t{hinge}\t{review}\tf\n"
                for seq, (r, speaker, kind, content, vis, tags, hinge, review), n in zip(
                    range(start + 1, start + len(chunk) + 1),
                    _copy_rows(chunk),
                    counts,
                    strict=True,
                )
            ]
            copy.write("".join(lines))
    send_on_commit("index_turn_search", pk)
    return _TurnIds(pk, len(rows))


class _TurnIds(Sequence):
    """PostgreSQL: the imported turns' ids in list order, read only if lore points at
    turns (most transcripts' lore does not; COPY returns no ids)."""

    def __init__(self, experiment_id: int, count: int):
        self.experiment_id, self.count, self.ids = experiment_id, count, None

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index):
        if self.ids is None:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT id FROM campaigns_turn WHERE experiment_id = %s ORDER BY seq",
                    [self.experiment_id],
                )
                self.ids = [row[0] for row in cursor.fetchall()]
        return self.ids[index]


def _copy_text(value: str) -> str:
    """A value in COPY's text format: backslash, tab, newline and return escaped."""
    if "\\" in value or "\t" in value or "\n" in value or "\r" in value:
        value = value.replace("\\", "\\\\").replace("\t", "\\t")
        value = value.replace("\n", "\\n").replace("\r", "\\r")
    return value


def _copy_rows(chunk: list[tuple]):
    """Rows with their non-content columns in COPY text form (JSON texts repeat: the
    memo escapes each distinct one once)."""
    memo: dict[str | None, str] = {None: "\\N"}
    for r, speaker, kind, content, vis, tags, hinge, review in chunk:
        vis_text = memo.get(vis)
        if vis_text is None:
            vis_text = memo[vis] = _copy_text(vis)
        tags_text = memo.get(tags)
        if tags_text is None:
            tags_text = memo[tags] = _copy_text(tags)
        yield (
            r,
            _copy_text(speaker),
            kind,
            content,
            vis_text,
            tags_text,
            "t" if hinge else "f",
            "t" if review else "f",
        )


def _sqlite_insert(pk: int, items: list, clean) -> Sequence[int]:
    """Full-text rows (while ``clean()`` validates the turns), then multi-row INSERTs of
    the turns with ids assigned here.

    The ids continue the table's AUTOINCREMENT sequence: this transaction already holds
    SQLite's single write lock (it created the experiment), so no other connection can
    take one meanwhile. Multi-row INSERTs (as many rows each as SQLite's variable limit
    allows) take half the time of an executemany, which pays a statement per row. On the
    driver's connection, in the same transaction: Django's wrapper would rewrite, and
    with DEBUG log, every one of those thousands of parameters. The writer thread is the
    connection's only user until it is done (the main thread validates meanwhile).
    """
    import sqlite3

    texts = [
        item["content"] if type(item) is dict and type(item.get("content")) is str else ""
        for item in items
    ]
    raw = connection.connection
    with _sqlite_cache(raw, sum(map(len, texts))):
        first = _next_turn_id(raw)
        ids = range(first, first + len(items))
        with ThreadPoolExecutor(max_workers=1) as writer:  # exits only once it is done
            fts = writer.submit(_sqlite_fts_insert, raw, pk, ids, texts)
            rows = clean()
            trigger = fts.result()
        limit = raw.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
        per_statement = max(1, min(_CHUNK, limit // (_TURN_COLUMN_COUNT + 1)))
        statements: dict[int, str] = {}
        created_at = connection.ops.adapt_datetimefield_value(timezone.now())
        with ThreadPoolExecutor(max_workers=1) as pool:
            counted = [
                pool.submit(tokens.count_many, texts[s : s + _CHUNK])
                for s in range(0, len(rows), _CHUNK)
            ]
            try:
                for k, start in enumerate(range(0, len(rows), _CHUNK)):
                    counts = counted[k].result()
                    chunk = rows[start : start + _CHUNK]
                    for offset in range(0, len(chunk), per_statement):
                        part = chunk[offset : offset + per_statement]
                        at = start + offset
                        values = [
                            value
                            for i, row, count in zip(
                                range(at, at + len(part)),
                                part,
                                counts[offset : offset + len(part)],
                                strict=True,
                            )
                            for value in (ids[i], pk, i + 1, count, created_at, *row)
                        ]
                        sql = statements.get(len(part))
                        if sql is None:
                            sql = _INSERT_TURNS + ", ".join([_ROW] * len(part))
                            statements[len(part)] = sql
                        raw.execute(sql, values)
            finally:
                for future in counted:  # after an error: do not count what will not be stored
                    future.cancel()
        if trigger is not None:
            raw.execute(trigger)
    return ids


@contextmanager
def _sqlite_cache(raw, text_bytes: int):
    """A page cache that holds the import's writes (table, indexes, FTS: ~3× the text),
    up to 256 MB, for its length: SQLite's default 2 MB spills dirty pages mid-write."""
    (previous,) = raw.execute("PRAGMA cache_size").fetchone()
    kib = min(256 * 1024, max(-previous if previous < 0 else 0, 3 * text_bytes // 1024))
    raw.execute(f"PRAGMA cache_size = -{int(kib)}")
    try:
        yield
    finally:
        raw.execute(f"PRAGMA cache_size = {int(previous)}")


def _next_turn_id(raw) -> int:
    """The id AUTOINCREMENT would give the next turn (this transaction holds the lock)."""
    found = raw.execute(
        "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'campaigns_turn'), 0),"
        " coalesce((SELECT max(id) FROM campaigns_turn), 0))"
    ).fetchone()
    return found[0] + 1


_FTS_TRIGGER = "campaigns_turn_fts_ai"


def _sqlite_fts_insert(raw, pk: int, ids: range, texts: list[str]) -> str | None:
    """The turns' full-text rows, as the insert trigger would write them, in one pass;
    returns the trigger's SQL for the caller to recreate once the turns are in.

    The per-row trigger inserts in descending FTS rowid order (rowid = -id, migration
    0010), which makes FTS5 flush on every row. Here it is dropped, the rows go in
    ascending rowid order; a failure rolls all of it back together. No full-text table
    (not migrated this far): nothing to keep in sync, None.
    """
    import sqlite3

    found = raw.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?", [_FTS_TRIGGER]
    ).fetchone()
    if found is None:
        return None
    raw.execute(f"DROP TRIGGER {_FTS_TRIGGER}")
    prefix = f"xexp{pk} "
    # Few, large statements: this runs beside validation, and each statement start and
    # end waits for the GIL.
    per_statement = max(1, min(8000, raw.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // 2))
    for end in range(len(texts), 0, -per_statement):
        values = [
            value
            for i in range(end - 1, max(0, end - per_statement) - 1, -1)
            for value in (-ids[i], prefix + texts[i])
        ]
        raw.execute(_FTS_INSERT + ", ".join(["(?, ?)"] * (len(values) // 2)), values)
    return found[0]


_FTS_INSERT = "INSERT INTO campaigns_turn_fts(rowid, body) VALUES "
_TURN_COLUMNS = (
    "experiment_id, seq, tokens, created_at, round, speaker, kind, content, visibility, "
    "tags, hinge, needs_review"
)
_TURN_COLUMN_COUNT = 12
_ROW = "(" + ", ".join(["?"] * (_TURN_COLUMN_COUNT + 1)) + ")"  # the driver's placeholders
_INSERT_TURNS = f"INSERT INTO campaigns_turn (id, {_TURN_COLUMNS}) VALUES "
_COPY_TURNS = f"COPY campaigns_turn ({_TURN_COLUMNS}, search_indexed) FROM STDIN"


SEARCH_INDEX_BATCH = 5000  # rows per UPDATE (and per transaction) of the indexing task


def index_imported_turns(*, experiment_id: int, batch: int = SEARCH_INDEX_BATCH) -> int:
    """PostgreSQL: add an import's turns to the full-text index; how many it indexed.

    The body of `campaigns.tasks.index_turn_search`. Flips ``search_indexed`` on the
    experiment's pending rows ``batch`` at a time, each batch its own transaction (short
    locks; a crash keeps what is done). Idempotent: a second run finds nothing pending and
    writes nothing. Searches give the same rows before, during and after (see
    `selectors_packs._PG_NEWEST_MATCHES`). SQLite indexes during the import: 0.
    """
    if connection.vendor != "postgresql":
        return 0
    with connection.cursor() as cursor:
        cursor.execute(_PENDING_SEQS, [experiment_id])
        low, high = cursor.fetchone()
    if low is None:
        return 0
    done = 0
    for start in range(low, high + 1, batch):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(_INDEX_BATCH, [experiment_id, start, start + batch])
            done += cursor.rowcount
    return done


# Batches by seq range, through the (experiment, seq) unique index: a LIMIT over the
# pending rows would walk past every row already flipped in this run, batch after batch.
# NOT search_indexed: rows a concurrent run already flipped are left alone.
_PENDING_SEQS = (
    "SELECT min(seq), max(seq) FROM campaigns_turn WHERE experiment_id = %s AND NOT search_indexed"
)
_INDEX_BATCH = (
    "UPDATE campaigns_turn SET search_indexed = true "
    "WHERE experiment_id = %s AND seq >= %s AND seq < %s AND NOT search_indexed"
)


def _import_lore(
    experiment: Experiment, roles: set[str], turn_ids: Sequence[int], items: list
) -> None:
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
