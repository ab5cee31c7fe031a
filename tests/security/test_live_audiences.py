"""Attacker-side properties (issue 25).

Whatever the agents write in a round — public text, whispers to anyone, monologues, GM
notes, text outside any block, public text that quotes a GM note — the bytes each role's
live connection receives hold nothing of an audience that role is not in, and an answer
the output guard holds never reaches a player's page. Each example is a real relay round
on the Gemini stand-in (the real SDK, streaming a few words a chunk), watched through the
real SSE endpoint by a seated player and by the owner narrowed to each role (``?as=``),
with a fresh campaign.

Whatever people write outside a model's step — posts, whispers, monologues, GM notes,
edits, reveals — each role's connection gets one ``turn`` event per write of a turn that
role reads (before or after the write), and none for any other: not even a content-free
event, whose existence and timing would tell a player that a GM note or another's whisper
was written. No event on a player's connection names a turn."""

from __future__ import annotations

import itertools

import pytest
from django.test import Client
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from campaigns.models import Turn
from campaigns.reads.selectors import audiences_for_viewer, turns_visible_to, viewer_for_role
from campaigns.services import live
from campaigns.services.experiments import experiment_update
from campaigns.services.notes import note_create
from campaigns.services.relay import human_turn_create, round_start, steps
from campaigns.services.reveals import turn_reveal
from campaigns.services.turn_fixes import turn_edit
from context_engine.agent_output import parse_agent_output
from tests.campaigns.services.memory_support import use_gemini
from tests.factories import make_experiment, make_turn, make_user
from tests.live_support import drafts_by_id, open_live, parse_frames, read_live
from tests.standins.server import Reply

pytestmark = pytest.mark.django_db

ROLES = ("DM", "Thorin", "Cassia")
GM_SECRET = "the harbour master hides the stolen bell inside the lighthouse cistern"
_markers = itertools.count()

block = st.sampled_from(
    [
        "PUBLIC",
        "WHISPER to DM",
        "WHISPER to Thorin",
        "WHISPER to Cassia",
        "WHISPER to Thorin, Cassia",
        "MONOLOGUE",
        "GM NOTE",
        "STRAY",
        "LEAK",
    ]
)
answer = st.lists(block, min_size=1, max_size=4)


def write(blocks: list[str]) -> tuple[str, list[tuple[str, bool]]]:
    """An answer of ``blocks``, each carrying a unique marker word: (text, [(marker, leak)])."""
    lines, markers = [], []
    for label in blocks:
        marker = f"zq{next(_markers)}x"
        leak = label == "LEAK"
        if label == "STRAY":
            lines.insert(0, f"{marker} muses aloud before answering.")
        elif leak:
            lines.append(f"PUBLIC: {marker} shouts that {GM_SECRET} tonight.")
        else:
            lines.append(f"{label}: {marker} says something about the tide.")
        markers.append((marker, leak))
    # one block that is always usable, so no step asks its model a second time
    marker = f"zq{next(_markers)}x"
    lines.append(f"MONOLOGUE: {marker} keeps counting the bells.")
    markers.append((marker, False))
    return "\n".join(lines), markers


def audiences(text: str, speaker: str, markers) -> dict[str, object]:
    """Each marker's audience as the parser stores it (None: public)."""
    kind = "dm" if speaker == "DM" else "player"
    turns = parse_agent_output(
        text, speaker=speaker, speaker_kind=kind, roles=ROLES, dm_roles=("DM",)
    )
    found = {}
    for marker, _leak in markers:
        [turn] = [t for t in turns if marker in t.content]
        found[marker] = turn.visibility
    return found


@settings(
    max_examples=12,
    # each example is a whole round: a failure is reported as found, not shrunk for minutes
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    dm=answer,
    thorin=answer,
    cassia=answer,
    dm_answer=answer,
    chunk=st.integers(min_value=1, max_value=3),
)
def test_no_live_connection_receives_what_its_role_may_not_read(
    dm, thorin, cassia, dm_answer, chunk, owner, gemini_standin, django_capture_on_commit_callbacks
):
    experiment = make_experiment(owner=owner)
    experiment.participants.update(model="gemini-2.5-flash")
    experiment_update(
        experiment=experiment,
        config={"summarizer_model": "offline", "definer_model": "offline"},
    )
    make_turn(experiment, round=0, kind="gm_note", content=GM_SECRET, visibility=["DM"])
    seated = make_user(f"thorin{next(_markers)}")
    experiment.participants.filter(role="Thorin").update(user=seated)

    gemini_standin.reset()
    gemini_standin.chunk_words = chunk
    expected: dict[str, object] = {}
    leaks: set[str] = set()
    for speaker, blocks in (("DM", dm), ("Thorin", thorin), ("Cassia", cassia), ("DM", dm_answer)):
        text, markers = write(blocks)
        gemini_standin.script([Reply(text)])
        expected.update(audiences(text, speaker, markers))
        leaks.update(marker for marker, leak in markers if leak)

    pages = {}
    client = Client()
    client.force_login(seated)
    pages["Thorin (seated)"] = ("Thorin", open_live(client, experiment))
    for role in ROLES:
        client = Client()
        client.force_login(owner)
        pages[f"{role} (as)"] = (role, open_live(client, experiment, as_role=role))
    with django_capture_on_commit_callbacks(execute=True):
        round_start(experiment=experiment, user=owner)

    for name, (role, response) in pages.items():
        raw = read_live(response)
        frames = parse_frames(raw)
        drafts = drafts_by_id(frames)
        seen = raw.decode() + "".join(d["text"] for d in drafts.values())
        withdrawn = {f.data["draft_id"] for f in frames if f.event == "withdrawn"}
        for marker, visibility in expected.items():
            if visibility is not None and role not in visibility:
                assert marker not in seen, f"{name} received {marker} meant for {visibility}"
            if marker in leaks:  # what the guard passed before the quote, then withdrawn
                for draft in drafts.values():
                    if marker in draft["text"]:
                        assert draft["draft_id"] in withdrawn, f"{name} kept a held answer"
            stored = Turn.objects.filter(
                experiment=experiment, round=1, content__contains=marker, held_at__isnull=True
            ).exists()
            if stored and (visibility is None or role in visibility):
                assert marker in seen, f"{name} never saw {marker}, which it reads"
        # the quoted GM note itself never, not one word past what the guard passed
        assert "stolen bell" not in seen and "lighthouse cistern" not in seen, name


# People's writes: (who, kind, audience) posts, and edits / reveals of an earlier turn.
post = st.sampled_from(
    [
        ("Thorin", "action", None),
        ("Thorin", "whisper", ["DM", "Thorin"]),
        ("Thorin", "monologue", None),
        ("DM", "narrative", None),
        ("DM", "gm_note", None),
        ("DM", "whisper", ["Cassia", "DM"]),
        ("DM", "whisper", ["Cassia", "DM", "Thorin"]),
        ("Cassia", "whisper", ["Cassia", "DM"]),
        ("Cassia", "monologue", None),
    ]
)
change = st.tuples(st.sampled_from(["edit", "reveal"]), st.integers(min_value=0, max_value=20))
writes = st.lists(st.one_of(post, change), min_size=1, max_size=6)


def _held(experiment, role: str) -> dict[str, list]:
    """What the broker holds on ``role``'s channels (a failure's report: whether a
    missing event was never published or was published and not read)."""
    channels = audiences_for_viewer(viewer_for_role(experiment=experiment, role=role))
    return {ch: live.broker().backlog(experiment.pk, ch, 20) for ch in channels}


def _reads(experiment, role: str, turn_id: int) -> bool:
    viewer = viewer_for_role(experiment=experiment, role=role)
    return turns_visible_to(experiment=experiment, viewer=viewer).filter(pk=turn_id).exists()


def _apply(experiment, op, *, owner, seated, made: list[Turn]) -> int | None:
    """One write; the id of the turn it touched (None: it changed nothing)."""
    if len(op) == 3:
        speaker, kind, audience = op
        if kind == "gm_note":
            turn = note_create(experiment=experiment, user=owner, speaker="DM", content="zq note")
        else:
            turn = human_turn_create(
                experiment=experiment,
                user=seated if speaker == "Thorin" else owner,
                speaker=speaker,
                kind=kind,
                content=f"zq {kind} by {speaker}",
                visibility=audience,
            )
        made.append(turn)
        return turn.pk
    action, index = op
    if not made:
        return None
    turn = Turn.objects.get(pk=made[index % len(made)].pk)
    if action == "edit":
        turn_edit(turn=turn, user=owner, content=turn.content + " (edited)")
        return turn.pk
    if turn.visibility is None or turn.kind == "monologue" or "Thorin" in turn.visibility:
        return None  # nothing to widen for Thorin
    turn_reveal(experiment=experiment, turn=turn, visibility=[*turn.visibility, "Thorin"])
    return turn.pk


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=writes)
def test_a_connection_hears_of_a_persons_write_only_when_its_role_reads_the_turn(
    ops, owner, django_capture_on_commit_callbacks
):
    experiment = make_experiment(owner=owner)
    experiment.participants.update(model="offline")
    seated = make_user(f"thorin{next(_markers)}")
    experiment.participants.filter(role="Thorin").update(user=seated)
    pages = {}
    client = Client()
    client.force_login(seated)
    pages["Thorin (seated)"] = ("Thorin", open_live(client, experiment))
    for role in ROLES:
        client = Client()
        client.force_login(owner)
        pages[f"{role} (as)"] = (role, open_live(client, experiment, as_role=role))
    client = Client()
    client.force_login(owner)
    everything = open_live(client, experiment)

    expected = {name: 0 for name in pages}
    touched: list[int] = []
    made: list[Turn] = []
    for op in ops:
        before = {role: None for role in ROLES}
        if len(op) == 2 and made:  # who read the turn before it changed
            target = made[op[1] % len(made)].pk
            before = {role: _reads(experiment, role, target) for role in ROLES}
        with django_capture_on_commit_callbacks(execute=True):
            turn_id = _apply(experiment, op, owner=owner, seated=seated, made=made)
        if turn_id is None:
            continue
        touched.append(turn_id)
        for name, (role, _response) in pages.items():
            if before[role] or _reads(experiment, role, turn_id):
                expected[name] += 1

    for name, (role, response) in pages.items():
        frames = parse_frames(read_live(response))
        turn_events = [f for f in frames if f.event == "turn"]
        assert len(turn_events) == expected[name], (name, ops, frames, _held(experiment, role))
        assert all(f.data == {} for f in turn_events), name  # no turn id, no count
    seen = [f.data["turns"] for f in parse_frames(read_live(everything)) if f.event == "turn"]
    assert [pk for ids in seen for pk in ids] == touched  # the owner: every write, by id


@pytest.fixture(autouse=True)
def _fast(settings, gemini_standin, monkeypatch):
    use_gemini(settings, gemini_standin)
    settings.BABEL_LIVE_MAX_SECONDS = 0.3
    monkeypatch.setattr(steps, "_sleep", lambda _s: None)
