"""The importer's fast turn validation is `turn_fields` itself, only faster.

`cleaning.TurnCleaner.fast` accepts the turns it can prove well-formed and memoises
visibility and tags per distinct value; everything else goes through `turn_fields`. On
generated turns, good and bad, a row from the fast path equals the row `turn_fields`
gives, the fast path never accepts a turn `turn_fields` rejects, and the cleaner as a
whole raises exactly the error (field names and messages) `turn_fields` raises.
"""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError
from hypothesis import given, settings
from hypothesis import strategies as st

from campaigns.services.transcripts import cleaning
from campaigns.services.transcripts.common import TURN_KEYS
from campaigns.services.turns import turn_fields
from campaigns.validation import prefix_errors
from context_engine.types import TURN_KINDS

ROLES = {"DM", "Cassia", "Thorin", "Wren"}
LIMIT = 60

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=False, width=16),
    st.sampled_from(["", " ", "DM", "x"]),
)
_role_or_junk = st.one_of(
    st.sampled_from(sorted(ROLES)),
    st.sampled_from(["Nobody", "dm", "", " DM"]),
    _scalars,
    st.lists(st.sampled_from(sorted(ROLES)), max_size=2),  # unhashable entry
    st.dictionaries(st.just("role"), st.just("DM"), max_size=1),
)
_visibility = st.one_of(
    st.none(),
    st.lists(st.sampled_from(sorted(ROLES)), min_size=0, max_size=4),
    st.lists(_role_or_junk, max_size=3),
    st.sampled_from(["DM", "", "public"]),
    st.tuples(st.sampled_from(sorted(ROLES))),
    _scalars,
)
_tag = st.one_of(
    st.sampled_from(["npc:Vane", "thread:t1", "loc:docks", " ", "", "x" * 101, "y" * 100]),
    st.text(max_size=6),
    _scalars,
    st.lists(st.just("a"), max_size=1),
)
_tags = st.one_of(
    st.none(),
    st.lists(_tag, max_size=5),
    st.lists(st.sampled_from(["a", "b"]), min_size=49, max_size=52),  # around MAX_TAGS
    st.sampled_from(["npc:Vane", ""]),
    _scalars,
)
_content = st.one_of(
    st.text(max_size=LIMIT + 5),
    st.sampled_from(["", " ", "\n\t", "\u2003", "\x1c", "a" * LIMIT, "a" * (LIMIT + 1)]),
    _scalars,
)
_FIELDS = {
    "round": st.one_of(st.sampled_from([-1, 0, 7, 100_000, 100_001, 10**30]), _scalars),
    "speaker": _role_or_junk,
    "kind": st.one_of(st.sampled_from(TURN_KINDS), st.sampled_from(["Whisper", "note"]), _scalars),
    "content": _content,
    "visibility": _visibility,
    "tags": _tags,
    "hinge": st.one_of(st.booleans(), _scalars),
    "needs_review": st.one_of(st.booleans(), _scalars),
    # Bad keys only: one cleaner sees every item twice, and a good key twice is a duplicate.
    "key": st.one_of(st.sampled_from(["", "k" * 65]), st.integers(), st.lists(st.just("a"))),
}
_well_formed = st.fixed_dictionaries(
    {
        "round": st.integers(0, 40),
        "speaker": st.sampled_from(sorted(ROLES)),
        "kind": st.sampled_from(TURN_KINDS),
        "content": st.text(min_size=1, max_size=LIMIT).filter(str.strip),
        "visibility": st.one_of(
            st.none(), st.lists(st.sampled_from(sorted(ROLES)), min_size=1, max_size=3)
        ),
        "tags": st.lists(st.sampled_from(["npc:Vane", "thread:t1", "loc:docks"]), max_size=3),
        "hinge": st.booleans(),
    },
    optional={"needs_review": st.booleans()},
)
# A well-formed turn with one field replaced by anything (or dropped): near misses.
_one_off = st.builds(
    lambda base, change: (
        {k: v for k, v in base.items() if k != change[0]}
        if change[1] == "drop"
        else {**base, change[0]: change[1]}
    ),
    _well_formed,
    st.sampled_from(sorted(_FIELDS)).flatmap(
        lambda key: st.tuples(st.just(key), st.one_of(_FIELDS[key], st.just("drop")))
    ),
)
_any_turn = st.one_of(
    _one_off,
    _well_formed,
    st.fixed_dictionaries({}, optional={**_FIELDS, "mood": st.just("grim")}),
    st.sampled_from([None, 1, "turn", [1]]),
)


def _reference(index: int, item: object, dm_roles: tuple[str, ...]) -> tuple:
    """The importer's row as `turn_fields` alone gives it (the code before the fast path)."""
    prefix = f"turns[{index}]."
    if not isinstance(item, dict):
        raise ValidationError({prefix.rstrip("."): ["Must be an object."]})
    unknown = sorted(set(item) - TURN_KEYS)
    if unknown:
        raise ValidationError({f"{prefix}{key}": ["Unknown field."] for key in unknown})
    needs_review = item.get("needs_review", False)
    if not isinstance(needs_review, bool):
        raise ValidationError({f"{prefix}needs_review": ["Must be true or false."]})
    key = item.get("key")
    if key is not None and (not isinstance(key, str) or not 0 < len(key) <= 64):
        raise ValidationError({f"{prefix}key": ["A turn key is a string of 1–64 characters."]})
    try:
        cleaned = turn_fields(
            roles=ROLES,
            round=item.get("round"),
            speaker=item.get("speaker"),
            kind=item.get("kind"),
            content=item.get("content"),
            visibility=item.get("visibility"),
            tags=item.get("tags"),
            hinge=item.get("hinge", False),
            content_limit=LIMIT,
            dm_roles=dm_roles,
            count_tokens=False,
        )
    except ValidationError as exc:
        raise prefix_errors(exc, prefix) from None
    return (
        cleaned["round"],
        cleaned["speaker"],
        cleaned["kind"],
        cleaned["content"],
        None if cleaned["visibility"] is None else json.dumps(cleaned["visibility"]),
        json.dumps(cleaned["tags"]),
        cleaned["hinge"],
        needs_review,
        key,
    )


def _outcome(call):
    try:
        return ("row", call())
    except ValidationError as exc:
        return ("error", exc.message_dict)


@settings(max_examples=400, deadline=None)
@given(
    items=st.lists(st.one_of(_one_off, _one_off, _one_off, _any_turn), max_size=12),
    dm_roles=st.sampled_from([("DM",), ()]),
)
def test_the_fast_path_agrees_with_turn_fields_on_good_and_bad_turns(items, dm_roles):
    # One cleaner for the whole list: its memos carry over from turn to turn, as in an import.
    cleaner = cleaning.TurnCleaner(ROLES, dm_roles, LIMIT)
    for index, item in enumerate(items * 2):  # every value is seen twice: memo hits too
        expected = _outcome(lambda: _reference(index, item, dm_roles))  # noqa: B023
        fast = cleaner.fast(item)
        if fast is not None:
            assert expected == ("row", fast), item
        assert _outcome(lambda: cleaner.row(index, item)) == expected, item  # noqa: B023


@settings(max_examples=150, deadline=None)
@given(items=st.lists(_well_formed, min_size=1, max_size=8))
def test_well_formed_turns_take_the_fast_path(items):
    cleaner = cleaning.TurnCleaner(ROLES, ("DM",), LIMIT)
    for item in items:
        audience = None if item["visibility"] is None else sorted(set(item["visibility"]))
        if item["kind"] == "monologue" and audience not in (None, [item["speaker"]]):
            continue  # a rule break turn_fields reports: not well-formed after all
        if item["kind"] == "whisper" and audience == [item["speaker"]]:
            continue
        assert cleaner.fast(item) is not None, item


def test_a_bad_turn_after_good_ones_names_its_index_and_field():
    good = {"round": 1, "speaker": "DM", "kind": "narrative", "content": "Rain.", "tags": []}
    items = [good] * 5 + [{**good, "visibility": ["Nobody"]}]
    with pytest.raises(ValidationError) as caught:
        cleaning.clean_turns(cleaning.TurnCleaner(ROLES, ("DM",), LIMIT), items)
    assert list(caught.value.message_dict) == ["turns[5].visibility"]
    assert "Unknown role 'Nobody'" in caught.value.message_dict["turns[5].visibility"][0]


_GOOD = {
    "round": 3,
    "speaker": "Cassia",
    "kind": "whisper",
    "content": "The ledger is forged.",
    "visibility": ["Cassia", "Thorin"],
    "tags": ["npc:Vane"],
    "hinge": False,
}
_NEAR_MISSES = {
    "round": [-1, 100_001, True, 3.0, "3", None],
    "speaker": ["Nobody", "", None, 1, ["Cassia"]],
    "kind": ["Whisper", "", None, 1],
    "content": ["", " \n", "\u2003", "a" * (LIMIT + 1), None, 1, ["x"]],
    "visibility": [[], ["Cassia"], ["Nobody"], [1], [["Cassia"]], "Cassia", {"Cassia": 1}, 0],
    "tags": [[""], [" "], ["x" * 101], [1], ["a"] * 51, "npc:Vane", {}, [["a"]]],
    "hinge": [1, 0, None, "true"],
    "needs_review": [1, 0, None, "true"],
    "key": ["", "k" * 65, 7, ["t1"]],
    "mood": ["grim"],
}


@pytest.mark.parametrize(
    "field, value", [(field, value) for field, values in _NEAR_MISSES.items() for value in values]
)
@pytest.mark.parametrize("dm_roles", [("DM",), ()])
def test_a_near_miss_on_any_field_is_left_to_turn_fields(field, value, dm_roles):
    cleaner = cleaning.TurnCleaner(ROLES, dm_roles, LIMIT)
    assert cleaner.fast(_GOOD) == _reference(0, _GOOD, dm_roles)  # the memo now holds _GOOD's
    item = {**_GOOD, field: value}
    expected = _outcome(lambda: _reference(4, item, dm_roles))
    assert expected[0] == "error"
    assert cleaner.fast(item) is None
    assert _outcome(lambda: cleaner.row(4, item)) == expected


def test_turn_keys_take_the_fast_path_and_map_to_their_index():
    cleaner = cleaning.TurnCleaner(ROLES, ("DM",), LIMIT)
    rows = cleaning.clean_turns(cleaner, [_GOOD, {**_GOOD, "key": "t1"}, {**_GOOD, "key": "t2"}])
    assert [row[8] for row in rows] == [None, "t1", "t2"]
    assert cleaner.keys == {"t1": 1, "t2": 2}
    assert cleaner.fast({**_GOOD, "key": "k" * 64})[8] == "k" * 64


def test_a_duplicate_turn_key_names_the_second_turn():
    items = [{**_GOOD, "key": "a"}, {**_GOOD, "key": "b"}, {**_GOOD, "key": "a"}]
    with pytest.raises(ValidationError) as caught:
        cleaning.clean_turns(cleaning.TurnCleaner(ROLES, ("DM",), LIMIT), items)
    assert caught.value.message_dict == {"turns[2].key": ["Duplicate key."]}
