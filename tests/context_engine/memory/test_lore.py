"""A lore entry's audience is its sources' intersection; its text comes only from them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_engine.llm import OfflineClient
from context_engine.memory import (
    define_from_sources,
    lore_audience,
    readable_by_audience,
    usable_sources,
)
from context_engine.types import TurnView
from context_engine.visibility import NOBODY, can_read

ROLES = ("DM", "Thorin", "Cassia", "Mira")


def turn(n: int, content: str, visibility=None, round: int = 1) -> TurnView:
    return TurnView(
        id=n,
        seq=n,
        round=round,
        speaker="DM",
        kind="narrative",
        content=content,
        visibility=visibility,
    )


class EchoClient:
    """A model that repeats its whole prompt as the definition: any leak shows."""

    offline = False
    model = "echo"

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def complete(self, messages, *, timeout=None, max_output_tokens=None):
        text = "\n".join(m["content"] for m in messages)
        self.prompts.append(text)
        return text

    def complete_json(self, messages, *, schema, timeout=None, max_output_tokens=None):
        return {"definition": " ".join(self.complete(messages).split())}


@pytest.mark.parametrize(
    ("visibilities", "audience"),
    [
        ([None, None], None),
        ([None, ("DM", "Thorin")], ("DM", "Thorin")),
        ([("DM", "Thorin"), ("Cassia", "DM", "Thorin")], ("DM", "Thorin")),
        ([("Thorin",), ("Cassia",)], ()),
        ([], NOBODY),
    ],
)
def test_the_audience_is_the_intersection_and_fails_closed_without_sources(visibilities, audience):
    sources = [turn(n, "x", v) for n, v in enumerate(visibilities)]
    assert lore_audience(sources) == audience


@pytest.mark.parametrize(
    ("visibility", "audience", "readable"),
    [
        (None, None, True),
        (("DM",), None, False),
        (None, ("DM",), True),
        (("DM", "Thorin"), ("Thorin",), True),
        (("DM", "Thorin"), ("Cassia", "Thorin"), False),
        (("DM",), (), True),
    ],
)
def test_a_source_is_usable_only_if_every_reader_of_the_audience_may_read_it(
    visibility, audience, readable
):
    assert readable_by_audience(visibility, audience) is readable


def test_a_public_entry_is_defined_from_public_text_only():
    sources = [
        turn(1, "Thorin hides the void-chisel in WHISPERED-PLACE.", ("DM", "Thorin"), round=1),
        turn(2, "A void-chisel glints on the altar.", None, round=3),
    ]
    entry = define_from_sources("void-chisel", sources, client=EchoClient(), audience=None)
    assert entry is not None
    assert entry.source_turn_ids == (2,)
    assert "WHISPERED-PLACE" not in entry.definition
    assert (entry.first_seen_round, entry.last_seen_round, entry.mention_count) == (3, 3, 1)


def test_by_default_the_entry_takes_the_intersection_and_both_sources():
    sources = [
        turn(1, "Thorin hides the void-chisel in a boot.", ("DM", "Thorin")),
        turn(2, "A void-chisel glints on the altar.", None),
    ]
    entry = define_from_sources("void-chisel", sources, client=OfflineClient())
    assert entry is not None
    assert entry.audience == ("DM", "Thorin")
    assert entry.source_turn_ids == (1, 2)
    assert entry.definition == "Thorin hides the void-chisel in a boot."
    assert (entry.method, entry.category) == ("first_use", "artifact")


def test_no_readable_mention_means_no_entry():
    sources = [turn(1, "The void-chisel is Cassia's secret.", ("Cassia",))]
    assert define_from_sources("void-chisel", sources, client=None, audience=("Thorin",)) is None
    assert usable_sources(sources, ("Thorin",)) == []


visibilities = st.one_of(
    st.none(),
    st.lists(st.sampled_from(ROLES), min_size=1, max_size=4, unique=True).map(
        lambda roles: tuple(sorted(roles))
    ),
)


@st.composite
def campaigns(draw):
    count = draw(st.integers(min_value=1, max_value=8))
    turns = [
        turn(
            n,
            f"The void-chisel glows beside MARK{n}Q. Unrelated words SIDE{n}Q.",
            draw(visibilities),
            round=draw(st.integers(min_value=0, max_value=12)),
        )
        for n in range(1, count + 1)
    ]
    explicit = draw(st.booleans())
    audience = draw(st.one_of(visibilities, st.just(()))) if explicit else None
    return turns, explicit, audience


@given(campaigns(), st.sampled_from(["echo", "offline"]))
def test_definitions_never_use_text_outside_their_audience(campaign, kind):
    turns, explicit, audience = campaign
    client = EchoClient() if kind == "echo" else OfflineClient()
    if explicit:
        entry = define_from_sources("void-chisel", turns, client=client, audience=audience)
    else:
        entry = define_from_sources("void-chisel", turns, client=client)
        audience = lore_audience(turns)
    prompts = "\n".join(getattr(client, "prompts", []))
    allowed = {t.id for t in turns if readable_by_audience(t.visibility, audience)}
    for t in turns:
        if t.id not in allowed:
            marker = f"MARK{t.id}Q"
            assert entry is None or marker not in entry.definition
            assert marker not in prompts
            assert entry is None or t.id not in entry.source_turn_ids
        assert f"SIDE{t.id}Q" not in prompts  # only sentences that mention the term
    if entry is None:
        assert not allowed
        return
    assert entry.audience == audience
    assert set(entry.source_turn_ids) == allowed  # nothing usable is needlessly dropped
    for source in (t for t in turns if t.id in entry.source_turn_ids):
        if audience is None:
            assert source.visibility is None
        for role in audience or ():
            assert can_read(source.visibility, role)
    if not explicit:
        assert set(entry.source_turn_ids) == {t.id for t in turns}
