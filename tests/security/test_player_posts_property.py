"""Property: whatever a player posts — any round, kind, visibility, hinge, tags and
content, in any order — what every *other* role can read changes only by the player's own
text addressed to it: no secret goal, private turn, lore entry or pack line of another
audience becomes readable, the clock does not move, and nothing is pinned."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from campaigns.models import LoreEntry
from campaigns.reads import numbering, selectors
from campaigns.services.context import pack_for_role
from campaigns.services.experiments import experiment_create, participant_create
from campaigns.services.lore import lore_create
from campaigns.services.turns import turn_create
from tests.campaigns.api.conftest import client_for
from tests.factories import make_user

pytestmark = pytest.mark.django_db

ROLES = ("DM", "Thorin", "Cassia", "Wren")
OBSERVERS = ("DM", "Cassia", "Wren")
HIDDEN = re.compile(r"HID[a-z]+")
_users = itertools.count()

# Weighted toward posts a player may make (so many are stored), with every kind of
# refused one mixed in.
post = st.fixed_dictionaries(
    {
        "round": st.sampled_from([None, None, 2, 2, 0, 3, 100_001, 2**31 - 1]),
        "kind": st.sampled_from(
            ["action", "action", "whisper", "whisper", "monologue", "narrative", "gm_note"]
        ),
        "visibility": st.one_of(
            st.none(),
            st.sampled_from([["Thorin", "DM"], ["Thorin", "Cassia"], ["Thorin"]]),
            st.lists(st.sampled_from([*ROLES, "Ghost"]), min_size=1, max_size=3, unique=True),
        ),
        "hinge": st.booleans(),
        "tags": st.sampled_from([[], [], ["dead:Vane"], ["thread:coup"], ["npc:Vane"]]),
        "mention": st.sampled_from(["", " Lord Vane", " the brass-bound ledger"]),
    }
)


def seed_campaign(owner):
    experiment = experiment_create(name=f"Property {next(_users)}", hook="A flooded archive.")
    for order, role in enumerate(ROLES):
        participant_create(
            experiment=experiment,
            role=role,
            kind="dm" if role == "DM" else "player",
            order=order,
            secret=f"HIDsecret{role.lower()}",
            reveal_round=4 if role == "Cassia" else None,
        )
    attacker = make_user(f"attacker{next(_users)}")
    experiment.participants.filter(role="Thorin").update(user=attacker)
    seeded = [
        ("DM", "narrative", "Round two: Lord Vane walks the archive.", None),
        ("Cassia", "whisper", "HIDcassiawhisper about the vault.", ["Cassia", "DM"]),
        ("DM", "gm_note", "HIDgmnote the floor is a trap.", ["DM"]),
        ("Wren", "monologue", "HIDwrenmonologue I doubt them.", ["Wren"]),
        ("DM", "whisper", "HIDdmtowren meet me at dawn.", ["DM", "Wren"]),
    ]
    for speaker, kind, content, visibility in seeded:
        turn_create(
            experiment=experiment,
            round=2,
            speaker=speaker,
            kind=kind,
            content=content,
            visibility=visibility,
        )
    lore_create(
        experiment=experiment,
        user=owner,
        term="Vane",
        category="npc",
        definition="Lord of the archive; HIDloredm he is already dead.",
        audience=["DM"],
    )
    lore_create(
        experiment=experiment,
        user=owner,
        term="Lord Vane",
        category="npc",
        definition="Lord of the archive.",
        audience=None,
    )
    return experiment, attacker


def what_role_reads(api, experiment, user_for, role):
    viewer = selectors.viewer_for_role(experiment=experiment, role=role)
    turns = set(
        selectors.turns_visible_to(experiment=experiment, viewer=viewer).values_list(
            "pk", flat=True
        )
    )
    lore = {
        entry.pk: (entry.definition, entry.invalid_from_round, entry.status)
        for entry in selectors.lore_visible_to(experiment=experiment, viewer=viewer)
    }
    pack = pack_for_role(experiment=experiment, role=role)
    text = "\n".join(section.text for section in pack.sections)
    return turns, lore, text


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(posts=st.lists(post, min_size=1, max_size=6))
def test_a_players_posts_change_only_what_they_address(
    posts, owner, django_capture_on_commit_callbacks
):
    experiment, attacker = seed_campaign(owner)
    experiment.refresh_from_db()
    clock = experiment.current_round
    secrets_before = {
        role: {
            p.role: selectors.secret_readable(
                participant=p,
                viewer=selectors.viewer_for_role(experiment=experiment, role=role),
                round_now=clock,
            )
            for p in experiment.participants.all()
        }
        for role in OBSERVERS
    }
    before = {role: what_role_reads(None, experiment, None, role) for role in OBSERVERS}
    api = client_for(attacker)

    accepted = []
    with django_capture_on_commit_callbacks(execute=True):  # hydrator and digests run
        for index, item in enumerate(posts):
            body = {
                "speaker": "Thorin",
                "kind": item["kind"],
                "content": f"THR{index}x says{item['mention']}.",
                "visibility": item["visibility"],
                "hinge": item["hinge"],
                "tags": item["tags"],
            }
            if item["round"] is not None:
                body["round"] = item["round"]
            response = api.post(f"/api/experiments/{experiment.pk}/turns/", body, format="json")
            assert response.status_code in (201, 400, 403), response.content
            if response.status_code == 201:
                # The id a player is shown is the turn's position in their own stream.
                thorin = selectors.viewer_for_role(experiment=experiment, role="Thorin")
                accepted.append(
                    numbering.turn_at_position(
                        experiment=experiment, viewer=thorin, position=response.json()["id"]
                    )
                )

    experiment.refresh_from_db()
    assert experiment.current_round == clock
    assert all(not turn.hinge and turn.tags == [] for turn in accepted)
    assert all(turn.round == clock and turn.speaker == "Thorin" for turn in accepted)
    for role in OBSERVERS:
        turns_before, lore_before, pack_before = before[role]
        turns_after, lore_after, pack_after = what_role_reads(None, experiment, None, role)
        addressed = {t.pk for t in accepted if t.visibility is None or role in (t.visibility or [])}
        # Turns: exactly the player's own text addressed to this role was added.
        assert turns_after == turns_before | addressed
        # Secrets: unchanged for every participant.
        viewer = selectors.viewer_for_role(experiment=experiment, role=role)
        assert {
            p.role: selectors.secret_readable(participant=p, viewer=viewer, round_now=clock)
            for p in experiment.participants.all()
        } == secrets_before[role]
        # Lore: nothing it read was invalidated, rejected or rewritten by the posts; a new
        # entry comes only from turns this role reads.
        for pk, state in lore_before.items():
            assert lore_after.get(pk) == state
        for entry in LoreEntry.objects.filter(pk__in=set(lore_after) - set(lore_before)):
            sources = set(entry.source_turns.values_list("pk", flat=True))
            assert sources <= turns_after
        # Packs: no hidden marker it did not already read, no unaddressed text of Thorin's.
        assert set(HIDDEN.findall(pack_after)) <= set(HIDDEN.findall(pack_before))
        for turn in accepted:
            if turn.pk not in addressed:
                assert turn.content.split()[0] not in pack_after
