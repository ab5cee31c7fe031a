"""Property: whatever the campaign and its fog of war, memory never leaks.

Random campaigns (2–3 players, sometimes a judge), random turns of every kind with random
audiences, each carrying a unique marker word (a capitalised name and a coined lowercase
compound, in its text and tags), some turns quoting earlier markers. Turns go in through
`turn_create`, so the real after-commit dispatch hydrates them and runs the summarizer
when due; then a /checkpoint folds every audience (offline: the extractive digest, whose
Key Facts quote marked sentences). Afterwards, for every non-judge role: no marker it
cannot read in some turn appears in any digest, summary, lore entry or pack it receives,
nor any secret but its own.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from campaigns.models import LoreEntry, Summary
from campaigns.reads.selectors import (
    lore_visible_to,
    summaries_visible_to,
    turns_visible_to,
    viewer_for_role,
)
from campaigns.services.context import pack_for_role
from campaigns.services.experiments import experiment_create, participant_create
from campaigns.services.lore import lore_update
from campaigns.services.memory import hydrate_experiment, run_command
from campaigns.services.turns import turn_create

pytestmark = pytest.mark.django_db

LETTERS = "bcdfghjlmnpqrstvwx"
MARKER = re.compile(r"qz([a-z]{3})k", re.IGNORECASE)
KINDS = ["narrative", "action", "intel", "choice", "whisper", "gm_note", "monologue"]
PLAYERS = ["Thorin", "Cassia", "Wren"]


def code(index: int) -> str:
    a, rest = divmod(index, len(LETTERS) ** 2)
    b, c = divmod(rest, len(LETTERS))
    return LETTERS[a] + LETTERS[b] + LETTERS[c]


def name(index: int) -> str:
    return f"Qz{code(index)}k"


def markers_in(text: str) -> set[str]:
    return {match.lower() for match in MARKER.findall(text)}


@st.composite
def campaigns(draw):
    players = PLAYERS[: draw(st.integers(2, 3))]
    roles = ["DM", *players]
    count = draw(st.integers(4, 14))
    rounds = sorted(draw(st.lists(st.integers(0, 5), min_size=count, max_size=count)))
    turns = []
    for index, round_ in enumerate(rounds):
        speaker = draw(st.sampled_from(roles))
        kind = draw(st.sampled_from(KINDS))
        if kind == "gm_note":
            speaker, visibility = "DM", ["DM"]
        elif kind == "monologue":
            visibility = [speaker]
        elif kind == "whisper":
            others = [r for r in roles if r != speaker]
            to = draw(st.lists(st.sampled_from(others), min_size=1, max_size=2, unique=True))
            visibility = sorted({speaker, *to})
        else:
            visibility = draw(
                st.one_of(
                    st.none(),
                    st.lists(st.sampled_from(roles), min_size=1, max_size=3, unique=True).map(
                        sorted
                    ),
                )
            )
        quotes = draw(st.lists(st.integers(0, max(0, index - 1)), max_size=2)) if index else []
        turns.append(
            {
                "round": round_,
                "speaker": speaker,
                "kind": kind,
                "visibility": visibility,
                "hinge": draw(st.booleans()),
                "quotes": sorted(set(quotes)),
                "dead": draw(st.sampled_from([None, *sorted(set(quotes))])),
            }
        )
    return {
        "players": players,
        "judge": draw(st.booleans()),
        "interval": draw(st.integers(1, 3)),
        "secrets": draw(st.lists(st.booleans(), min_size=3, max_size=3)),
        "lock_first": draw(st.booleans()),
        "turns": turns,
    }


def build(spec, owner):
    experiment = experiment_create(
        name="Fog",
        hook="A door at low tide.",
        config={"memory_interval": spec["interval"]},
        owner=owner,
    )
    participant_create(experiment=experiment, role="DM", kind="dm", bio="The narrator.")
    for index, player in enumerate(spec["players"]):
        secret = f"My goal: steal the Qzsec{LETTERS[index]}k." if spec["secrets"][index] else ""
        participant_create(experiment=experiment, role=player, bio=f"{player}.", secret=secret)
    if spec["judge"]:
        participant_create(experiment=experiment, role="Oracle", kind="judge")
    return experiment


def content_for(index: int, turn: dict) -> str:
    own = name(index)
    parts = [
        f"{turn['speaker']} decided to take the {own}.",
        f"The {own.lower()}-moss glows by the harbour.",
    ]
    parts += [f"Someone speaks of the {name(q)} again." for q in turn["quotes"]]
    return " ".join(parts)


def tags_for(index: int, turn: dict) -> list[str]:
    tags = [f"thread:{name(index).lower()}", f"npc:{name(index)}"]
    if turn["dead"] is not None:
        tags.append(f"dead:{name(turn['dead'])}")
    return tags


def received(experiment, role: str) -> dict[str, str]:
    viewer = viewer_for_role(experiment=experiment, role=role)
    texts = {
        f"summary {s.kind} {s.audience} v{s.version}": s.text
        for s in summaries_visible_to(experiment=experiment, viewer=viewer)
    }
    for entry in lore_visible_to(experiment=experiment, viewer=viewer):
        texts[f"lore {entry.term!r} {entry.audience}"] = f"{entry.term} {entry.definition}"
    pack = pack_for_role(experiment=experiment, role=role)
    texts["pack"] = "\n".join(section.text for section in pack.sections)
    return texts


def allowed_for(experiment, role: str) -> set[str]:
    viewer = viewer_for_role(experiment=experiment, role=role)
    allowed: set[str] = set()
    for turn in turns_visible_to(experiment=experiment, viewer=viewer):
        allowed |= markers_in(turn.content) | markers_in(" ".join(turn.tags))
    own = experiment.participants.get(role=role)
    return allowed | markers_in(own.secret)


@settings(
    max_examples=35,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(spec=campaigns())
def test_no_marker_reaches_a_role_outside_its_audience(
    spec, owner, django_capture_on_commit_callbacks
):
    experiment = build(spec, owner)
    with django_capture_on_commit_callbacks(execute=True):
        for index, turn in enumerate(spec["turns"]):
            turn_create(
                experiment=experiment,
                round=turn["round"],
                speaker=turn["speaker"],
                kind=turn["kind"],
                content=content_for(index, turn),
                visibility=turn["visibility"],
                tags=tags_for(index, turn),
                hinge=turn["hinge"],
            )
            if index == 2 and spec["lock_first"]:
                locked = LoreEntry.objects.filter(experiment=experiment).order_by("id").first()
                if locked is not None:
                    lore_update(entry=locked, user=owner, locked=True)
        run_command(experiment=experiment, command="checkpoint", user=owner)

    # Monologues never go into a digest: with any other turn, the checkpoint made one.
    if any(turn["kind"] != "monologue" for turn in spec["turns"]):
        assert Summary.objects.filter(experiment=experiment, kind="digest").exists()
    # The offline digest is extractive: each audience's latest one quotes marked sentences
    # in its Key Facts, so the sweep below really checks what the extraction chose.
    latest = {}
    for summary in Summary.objects.filter(experiment=experiment, kind="digest").order_by("version"):
        latest[summary.audience_key] = summary
    for summary in latest.values():
        assert markers_in(dict(summary.sections).get("Key Facts", "")), summary.text
    # Hydration ran turn by turn already: the catch-up pass finds nothing new.
    assert hydrate_experiment(experiment=experiment)["created"] == []
    for role in ["DM", *spec["players"]]:
        allowed = allowed_for(experiment, role)
        for where, text in received(experiment, role).items():
            stray = markers_in(text) - allowed
            assert not stray, f"{role} received {sorted(stray)} in {where}: {text[:300]!r}"
    for entry in LoreEntry.objects.filter(experiment=experiment, locked=True):
        assert not entry.revisions.filter(
            actor__startswith="task:", id__gt=_lock_id(entry)
        ).exists()


def _lock_id(entry) -> int:
    lock = entry.revisions.filter(changes__has_key="locked").order_by("id").first()
    return lock.id if lock else 0
