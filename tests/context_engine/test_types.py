"""Engine value types: a turn keeps its hash, and equal turns hash alike."""

from __future__ import annotations

import pickle
from dataclasses import asdict, replace

from context_engine.types import TurnView


def turn(**changes) -> TurnView:
    fields = dict(
        id=7, seq=3, round=1, speaker="DM", kind="narrative", content="The gate", tags=("x",)
    )
    return TurnView(**{**fields, **changes})


def test_equal_turns_hash_alike_and_a_changed_field_is_another_key():
    first, second = turn(), turn()
    assert first == second and first is not second
    assert hash(first) == hash(second)
    cache = {first: "kept"}
    assert cache[second] == "kept"
    for changed in (turn(content="The wall"), replace(first, tokens=9), turn(hinge=True)):
        assert changed != first and changed not in cache


def test_a_turn_keeps_its_hash_but_not_its_fields_or_a_pickle_of_it():
    kept = turn()
    value = hash(kept)
    assert vars(kept)["_hash"] == value == hash(kept)  # hashed once, then looked up
    assert set(asdict(kept)) == {
        "id", "seq", "round", "speaker", "kind", "content", "visibility", "tags", "hinge",
        "tokens",
    }  # fmt: skip
    copy = pickle.loads(pickle.dumps(kept))  # another process hashes strings otherwise
    assert "_hash" not in vars(copy)
    assert copy == kept and hash(copy) == value
