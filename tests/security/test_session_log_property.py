"""The session log a role takes home (issue 24, ask 5), attacked the way packs are.

1. No other audience's text: for random campaigns — narration and actions, whispers among
   any roles, GM notes, monologues, narrowed turns, secret goals due or not, World Bible
   entries of every audience and status, digests of every audience — each role's log, as
   Markdown and as the printable page, holds no word of anything that role may not read
   (the test's own reading of the rules: public, or the role is named; a monologue is its
   speaker's; a secret goal is its owner's until its reveal round has passed), and holds
   every turn and confirmed entry it may.
2. Noninterference: Thorin's log is byte-for-byte the same for a campaign and for the same
   campaign with random additions he cannot read slipped in anywhere — so it shows no
   count, number or gap that betrays them (turns are numbered in his own stream).

Every thing's text carries its own marker (``QX<n>Z``), so a leak names what leaked.
"""

from __future__ import annotations

import itertools

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from campaigns.models import LoreEntry, Participant, Summary
from campaigns.reads import session_log as logs
from campaigns.reads.selectors import viewer_for_role
from campaigns.services.experiments import experiment_create, participant_create
from campaigns.services.lore import lore_create
from campaigns.services.turns import turn_create
from context_engine.visibility import audience_key
from tests.factories import make_user

pytestmark = pytest.mark.django_db

ROLES = ("DM", "Thorin", "Cassia", "Wren")
PLAYERS = ROLES[1:]
CLOCK = 3  # the open round: secret goals with a reveal round before it are revealed
_serial = itertools.count()

audiences = st.one_of(
    st.none(), st.lists(st.sampled_from(ROLES), min_size=1, max_size=3, unique=True).map(sorted)
)

turn_things = st.builds(
    lambda kind, speaker, audience, round_: ("turn", kind, speaker, audience, round_),
    st.sampled_from(("narrative", "action", "whisper", "gm_note", "monologue")),
    st.sampled_from(ROLES),
    audiences,
    st.integers(1, CLOCK),
)
lore_things = st.builds(
    lambda audience, status: ("lore", audience, status),
    audiences,
    st.sampled_from(("confirmed", "confirmed", "proposed", "rejected")),
)
secret_things = st.builds(
    lambda role, reveal: ("secret", role, reveal),
    st.sampled_from(ROLES),
    st.one_of(st.none(), st.integers(0, CLOCK + 2)),
)
digest_things = st.builds(lambda audience: ("digest", audience), audiences)
things = st.one_of(turn_things, turn_things, lore_things, secret_things, digest_things)


def _turn_shape(kind: str, speaker: str, audience: list | None):
    """A valid turn of this kind near what was drawn: ``(speaker, kind, visibility)``."""
    if kind == "gm_note":
        return "DM", kind, ["DM"]
    if kind == "monologue":
        return speaker, kind, [speaker]
    if kind == "whisper":
        others = [role for role in (audience or ROLES) if role != speaker] or [
            next(role for role in ROLES if role != speaker)
        ]
        return speaker, kind, sorted({speaker, *others})
    if kind == "narrative":
        return "DM", kind, None if audience is None else sorted({"DM", *audience})
    return speaker, kind, None if audience is None else sorted({speaker, *audience})


def _readable(role: str, audience: list | None) -> bool:
    return audience is None or role in audience


def _campaign(owner):
    experiment = experiment_create(name="Lowmere", hook="A flooded archive.", owner=owner)
    for order, role in enumerate(ROLES):
        participant_create(
            experiment=experiment,
            role=role,
            kind="dm" if role == "DM" else "player",
            order=order,
            model="offline",
            bio=f"{role} of Lowmere.",
        )
    experiment.current_round = CLOCK
    experiment.save(update_fields=["current_round"])
    return experiment


def _add(experiment, owner, thing, marker: str) -> tuple[str, object]:
    """Store one thing; ``(marker, who may read it: a role predicate)``."""
    text = f"{marker} the brass gear under the Sunken Archive"
    if thing[0] == "turn":
        _, kind, speaker, audience, round_ = thing
        speaker, kind, visibility = _turn_shape(kind, speaker, audience)
        turn_create(
            experiment=experiment,
            round=round_,
            speaker=speaker,
            kind=kind,
            content=text,
            visibility=visibility,
        )
        if kind == "monologue":
            return marker, lambda role, s=speaker: role == s
        return marker, lambda role, v=visibility: _readable(role, v)
    if thing[0] == "lore":
        _, audience, status = thing
        entry = lore_create(
            experiment=experiment,
            user=owner,
            term=f"Term{marker}",
            category="term",
            definition=text,
            audience=audience,
        )
        LoreEntry.objects.filter(pk=entry.pk).update(status=status)
        if status != "confirmed":
            return marker, lambda role: False  # only confirmed entries are in a log
        return marker, lambda role, a=audience: _readable(role, a)
    if thing[0] == "secret":
        _, owner_role, reveal = thing
        Participant.objects.filter(experiment=experiment, role=owner_role).update(
            secret=text, reveal_round=reveal
        )
        revealed = reveal is not None and reveal < CLOCK
        return marker, lambda role, o=owner_role, r=revealed: r or role == o
    _, audience = thing
    Summary.objects.create(
        experiment=experiment,
        kind="digest",
        audience=audience,
        audience_key=audience_key(audience),
        round_from=1,
        round_to=1,
        covered_seq=1,
        text=text,
        version=next(_serial) + 1,
    )
    return marker, lambda role, a=audience: _readable(role, a)


def _logs_of(experiment, role: str) -> dict[str, str]:
    viewer = viewer_for_role(experiment=experiment, role=role)
    log = logs.session_log_for(experiment=experiment, viewer=viewer)
    return {fmt: logs.session_log_render(log, fmt)[0].decode() for fmt in logs.FORMATS}


PROPERTY = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@PROPERTY
@given(drawn=st.lists(things, min_size=1, max_size=12))
def test_no_roles_log_holds_text_of_an_audience_it_is_not_in(drawn):
    owner = make_user(f"owner{next(_serial)}")
    with transaction.atomic():
        experiment = _campaign(owner)
        stored = []
        for thing in drawn:
            marker = f"QX{next(_serial)}Z"
            stored.append((thing, *_add(experiment, owner, thing, marker)))
        # A secret goal drawn twice for one role: only the last one is stored.
        last_secret = {thing[1]: marker for thing, marker, _ in stored if thing[0] == "secret"}
        for role in ROLES:
            for fmt, text in _logs_of(experiment, role).items():
                for thing, marker, may_read in stored:
                    if thing[0] == "secret" and last_secret[thing[1]] != marker:
                        assert marker not in text, (role, fmt, thing)
                        continue
                    if not may_read(role):
                        assert marker not in text, (role, fmt, thing)
                    elif thing[0] in ("turn", "lore", "secret"):
                        assert marker in text, (role, fmt, thing)  # and it is all there
        transaction.set_rollback(True)


# What Thorin reads, and additions he cannot.
visible_things = st.one_of(
    st.builds(
        lambda kind, speaker, round_: ("turn", kind, speaker, None, round_),
        st.sampled_from(("narrative", "action")),
        st.sampled_from(ROLES),
        st.integers(1, CLOCK),
    ),
    st.builds(
        lambda round_: ("turn", "whisper", "Thorin", ["DM", "Thorin"], round_),
        st.integers(1, CLOCK),
    ),
    st.builds(lambda round_: ("turn", "monologue", "Thorin", None, round_), st.integers(1, CLOCK)),
    st.just(("lore", None, "confirmed")),
    st.just(("lore", ["Thorin"], "confirmed")),
)
hidden_things = st.one_of(
    st.builds(lambda round_: ("turn", "gm_note", "DM", None, round_), st.integers(1, CLOCK)),
    st.builds(
        lambda speaker, round_: ("turn", "monologue", speaker, None, round_),
        st.sampled_from(("DM", "Cassia", "Wren")),
        st.integers(1, CLOCK),
    ),
    st.builds(
        lambda speaker, audience, round_: ("turn", "whisper", speaker, audience, round_),
        st.sampled_from(("DM", "Cassia", "Wren")),
        st.lists(st.sampled_from(("DM", "Cassia", "Wren")), min_size=2, unique=True),
        st.integers(1, CLOCK),
    ),
    st.builds(
        lambda audience, status: ("lore", audience, status),
        st.lists(st.sampled_from(("DM", "Cassia", "Wren")), min_size=1, unique=True),
        st.sampled_from(("confirmed", "proposed", "rejected")),
    ),
    st.builds(
        lambda role, reveal: ("secret", role, reveal),
        st.sampled_from(("DM", "Cassia", "Wren")),
        st.one_of(st.none(), st.integers(CLOCK, CLOCK + 5)),
    ),
    st.builds(
        lambda audience: ("digest", audience),
        st.lists(st.sampled_from(("DM", "Cassia", "Wren")), min_size=1, unique=True),
    ),
)


def _thorins_logs(owner, script, hidden: dict[int, list]) -> dict[str, str]:
    markers = itertools.count()  # the same markers in both runs, step for step
    with transaction.atomic():
        experiment = _campaign(owner)
        for index in range(len(script) + 1):
            for thing in hidden.get(index, ()):
                _add(experiment, owner, thing, f"HIDDEN{next(_serial)}")
            if index < len(script):
                _add(experiment, owner, script[index], f"QX{next(markers)}Z")
        found = _logs_of(experiment, "Thorin")
        transaction.set_rollback(True)
    return found


@PROPERTY
@given(
    script=st.lists(visible_things, min_size=1, max_size=8),
    hidden=st.dictionaries(
        st.integers(0, 8), st.lists(hidden_things, min_size=1, max_size=3), min_size=1
    ),
)
def test_thorins_log_is_the_same_whatever_he_cannot_read(script, hidden):
    owner = make_user(f"owner{next(_serial)}")
    plain = _thorins_logs(owner, script, {})
    with_hidden = _thorins_logs(owner, script, hidden)
    assert "QX0Z" in plain["md"] and "QX0Z" in plain["html"]
    for fmt in logs.FORMATS:
        assert with_hidden[fmt] == plain[fmt], (fmt, hidden)
        assert "HIDDEN" not in with_hidden[fmt]
