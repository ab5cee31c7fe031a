"""Turn items to row tuples, exactly as `turns.turn_fields` cleans them, with a fast path
for well-formed turns."""

from __future__ import annotations

import json

from django.conf import settings
from django.core.exceptions import ValidationError

from campaigns.services.transcripts.common import MAX_TURN_KEY, TURN_KEYS, reject_unknown
from campaigns.services.turns import private_kinds, turn_fields
from campaigns.validation import (
    clean_tags,
    clean_visibility,
    prefix_errors,
)
from context_engine.types import TURN_KINDS


class TurnCleaner:
    """Turn items → row tuples ``(round, speaker, kind, content, visibility JSON, tags JSON,
    hinge, needs_review, key)``, exactly as `turn_fields` cleans them (key None when absent);
    ``keys`` maps each turn key (optional, unique in the transcript) to its turn's index.

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
        self.keys: dict[str, int] = {}

    def row(self, index: int, item: object) -> tuple:
        fast = self.fast(item)
        if fast is None:
            fast = self.slow(index, item)
        key = fast[8]
        if key:
            if key in self.keys:
                raise ValidationError({f"turns[{index}].key": ["Duplicate key."]})
            self.keys[key] = index
        return fast

    def fast(self, item: object) -> tuple | None:
        """The row, or None when `slow` must decide (it raises or gives the row)."""
        if type(item) is not dict or not item.keys() <= TURN_KEYS:
            return None
        get = item.get
        round_, speaker, kind, content = get("round"), get("speaker"), get("kind"), get("content")
        hinge, needs_review = get("hinge", False), get("needs_review", False)
        key = get("key")
        if (
            (key is not None and (type(key) is not str or not 0 < len(key) <= MAX_TURN_KEY))
            or type(round_) is not int
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
            vis_json = self.visibility.get(vis_key, TurnCleaner)
            tags_json = self.tags.get(tags_key, TurnCleaner)
        except TypeError:  # an unhashable entry (a list, an object): not a well-formed turn
            return None
        if vis_json is TurnCleaner:
            vis_json = self.visibility[vis_key] = self._visibility(kind, speaker, visibility)
        if tags_json is TurnCleaner:
            tags_json = self.tags[tags_key] = self._tags(tags)
        if vis_json is self._BAD or tags_json is self._BAD:
            return None
        return (round_, speaker, kind, content, vis_json, tags_json, hinge, needs_review, key)

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
        reject_unknown(item, TURN_KEYS, prefix)
        needs_review = item.get("needs_review", False)
        if not isinstance(needs_review, bool):
            raise ValidationError({f"{prefix}needs_review": ["Must be true or false."]})
        key = item.get("key")
        if key is not None and (not isinstance(key, str) or not 0 < len(key) <= MAX_TURN_KEY):
            raise ValidationError(
                {f"{prefix}key": [f"A turn key is a string of 1–{MAX_TURN_KEY} characters."]}
            )
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
            None if key is None else str.__str__(key),
        )


def clean_turns(cleaner: TurnCleaner, items: list) -> list[tuple]:
    row = cleaner.row
    return [row(index, item) for index, item in enumerate(items)]
