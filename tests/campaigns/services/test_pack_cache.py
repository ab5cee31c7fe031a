"""The pack cache: a hit is the pack a fresh build gives; no write leaves a stale pack.

Every write below — through a service, the ORM, `QuerySet.update()` or a delete — is
followed by the same check: the pack `pack_for_role` serves equals a pack built from
scratch, and it changed where the write should change it.
"""

from __future__ import annotations

import pytest

from campaigns.models import (
    ContextEvent,
    Experiment,
    LoreEntry,
    Participant,
    Summary,
    Turn,
    VisibilityChange,
    WorldState,
)
from campaigns.services import pack_cache
from campaigns.services.context import pack_for_role
from context_engine.render import pack_to_json
from tests.factories import make_turn

pytestmark = pytest.mark.django_db

ROLES = ("DM", "Thorin", "Cassia")
INPUT = "Where is the lantern-moss?"


@pytest.fixture
def table(campaign):
    pack_cache.clear()
    for round_ in range(1, 7):
        make_turn(campaign, round=round_, content=f"Round {round_}: the lantern-moss glows.")
        make_turn(
            campaign,
            round=round_,
            speaker="Cassia",
            kind="whisper",
            content=f"cassia-whisper-{round_}",
            visibility=["Cassia", "DM"],
        )
    WorldState.objects.update_or_create(
        experiment=campaign, defaults={"flags": {"door_open": False}}
    )
    LoreEntry.objects.create(
        experiment=campaign, term="lantern-moss", key="lantern-moss", definition="A glowing moss."
    )
    yield campaign
    pack_cache.clear()


def _served(experiment, role):
    return pack_to_json(pack_for_role(experiment=experiment, role=role, input_text=INPUT))


def _fresh(experiment, role):
    return pack_to_json(
        pack_for_role(experiment=experiment, role=role, input_text=INPUT, use_cache=False)
    )


def _warm(experiment) -> dict[str, str]:
    return {role: _served(experiment, role) for role in ROLES}


def _assert_current(experiment, before: dict[str, str], changed: tuple[str, ...]):
    for role in ROLES:
        served = _served(experiment, role)
        assert served == _fresh(experiment, role), f"stale pack for {role}"
        if role in changed:
            assert served != before[role], f"the write did not reach {role}'s pack"


def test_a_repeated_pack_is_served_from_the_cache_without_a_rebuild(table):
    first = _served(table, "Thorin")
    misses = pack_cache.stats["misses"]
    again = _served(table, "Thorin")
    assert again == first
    assert pack_cache.stats["misses"] == misses
    assert pack_cache.stats["hits"] >= 1


def test_a_write_the_role_cannot_read_does_not_rebuild_its_pack(table):
    """Keyed by the role's own input: a GM note or a whisper between others changes
    nothing Thorin reads, so his pack is served as before (no rebuild to time)."""
    first = _served(table, "Thorin")
    misses = pack_cache.stats["misses"]
    make_turn(table, round=6, kind="gm_note", content="HIDDEN note.", visibility=["DM"])
    Participant.objects.filter(experiment=table, role="Cassia").update(
        secret="HIDDEN goal.", reveal_round=9
    )
    assert _served(table, "Thorin") == first
    assert pack_cache.stats["misses"] == misses


def test_another_input_is_another_entry(table):
    one = pack_for_role(experiment=table, role="Thorin", input_text="lantern-moss")
    other = pack_for_role(experiment=table, role="Thorin", input_text="something else")
    assert pack_to_json(one) != pack_to_json(other)


def _turn(experiment):
    return Turn.objects.filter(experiment=experiment, kind="narrative").order_by("-seq").first()


WRITES = {
    "a new turn": (lambda e: make_turn(e, round=6, content="A new public turn."), ROLES),
    "a turn edited in place (update)": (
        lambda e: Turn.objects.filter(pk=_turn(e).pk).update(content="Rewritten in place."),
        ROLES,
    ),
    "a turn's token count recounted (update)": (
        lambda e: Turn.objects.filter(experiment=e).update(tokens=7),
        ROLES,
    ),
    "a turn deleted": (lambda e: _turn(e).delete(), ROLES),
    "a whisper revealed (visibility widened)": (
        lambda e: Turn.objects.filter(experiment=e, kind="whisper").update(visibility=None),
        ("Thorin",),
    ),
    "a visibility change recorded": (
        lambda e: VisibilityChange.objects.create(experiment=e, turn=_turn(e), round=6),
        (),
    ),
    "a lore definition corrected (update)": (
        lambda e: LoreEntry.objects.filter(experiment=e).update(definition="A moss that sings."),
        ROLES,
    ),
    "a lore entry rejected": (
        lambda e: LoreEntry.objects.filter(experiment=e).update(status="rejected"),
        ROLES,
    ),
    "a lore entry deleted": (lambda e: LoreEntry.objects.filter(experiment=e).delete(), ROLES),
    "a new digest": (
        lambda e: Summary.objects.create(
            experiment=e, audience=None, audience_key="*", round_to=2, text="DIGEST-TEXT-NEW"
        ),
        ROLES,
    ),
    "a digest rewritten (update)": (
        lambda e: (
            Summary.objects.create(
                experiment=e, audience=None, audience_key="*", round_to=2, text="first"
            ),
            Summary.objects.filter(experiment=e).update(text="DIGEST-REWRITTEN"),
        ),
        ROLES,
    ),
    "a participant's bio edited": (
        lambda e: Participant.objects.filter(experiment=e, role="Thorin").update(bio="A new bio."),
        ROLES,
    ),
    "a participant added": (
        lambda e: Participant.objects.create(experiment=e, role="Wren", bio="Wren arrives."),
        ROLES,
    ),
    "the world state changed": (
        lambda e: WorldState.objects.filter(experiment=e).update(flags={"door_open": True}),
        ROLES,
    ),
    "a context event (/clear)": (
        lambda e: ContextEvent.objects.create(
            experiment=e, command="clear", round=6, seq=12, cleared_without_checkpoint=True
        ),
        (),  # this window is inside the minimum one: no pack text changes, the key does
    ),
    "the config changed (save)": (
        lambda e: _save_config(e, {"strategy": "sliding_window", "window_turns": 2}),
        ROLES,
    ),
    "the hook changed (update)": (
        lambda e: Experiment.objects.filter(pk=e.pk).update(hook="A brand new hook."),
        ROLES,
    ),
    "the campaign clock moved": (
        lambda e: Experiment.objects.filter(pk=e.pk).update(current_round=40),
        (),
    ),
}


def _save_config(experiment, config):
    experiment.refresh_from_db()
    experiment.config = config
    experiment.save()


@pytest.mark.parametrize("write", sorted(WRITES))
def test_no_write_leaves_a_stale_pack(table, write):
    action, changed = WRITES[write]
    before = _warm(table)
    action(table)
    _assert_current(table, before, changed)
