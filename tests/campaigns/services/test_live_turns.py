"""Stored turns and a round waiting for a human on the live channels (issue 25): every
write of the log outside a model's step — a human's post, a DM's note or whisper, an edit,
a reveal, a held turn published or discarded — tells exactly the channels of the turn's
readers, after its transaction commits, with turn ids on the omniscient channels only;
a round that starts waiting for a human tells every page. Attacker-side: a player's
channel hears nothing at all of a turn it may not read, not even a content-free event."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import transaction

from campaigns.models import Job, Turn
from campaigns.reads import selectors
from campaigns.services import live
from campaigns.services.holds import held_turn_discard, held_turn_publish, turn_hold
from campaigns.services.notes import note_create, note_delete, note_update
from campaigns.services.relay import human_turn_create, round_start
from campaigns.services.reveals import turn_reveal
from campaigns.services.turn_fixes import turn_edit
from tests.factories import make_experiment, make_turn, make_user

pytestmark = pytest.mark.django_db

ROLES = ("DM", "Thorin", "Cassia")
PLAYERS = ("role:Thorin", "role:Cassia")
EVERY_CHANNEL = [
    selectors.LIVE_ALL,
    selectors.LIVE_OWNER,
    selectors.LIVE_PUBLIC,
    *(selectors.live_role_channel(r) for r in ROLES),
    *(selectors.live_held_channel(r) for r in ROLES),
]


@pytest.fixture
def table(owner):
    experiment = make_experiment(owner=owner, roles=ROLES)
    thorin = make_user("live_turns_thorin")
    experiment.participants.filter(role="Thorin").update(user=thorin)
    return experiment, thorin


class Heard:
    """What each channel of the campaign received since it was made."""

    def __init__(self, experiment):
        self.campaign = experiment.pk
        self.start = live.broker().heads(self.campaign, EVERY_CHANNEL)

    def events(self, name: str | None = None) -> dict[str, list[dict]]:
        found: dict[str, list[dict]] = {ch: [] for ch in EVERY_CHANNEL}
        for event in live.broker().read(self.campaign, dict(self.start), timeout=0.05):
            if name is None or event.event == name:
                found[event.channel].append(event.data)
        return found

    def channels(self, name: str = "turn") -> set[str]:
        return {ch for ch, events in self.events(name).items() if events}


def write(experiment, capture, fn):
    """Run ``fn`` in a transaction; nothing is published until it commits."""
    heard = Heard(experiment)
    with capture(execute=True):
        result = fn()
        assert heard.channels(None) == set(), "published before the commit"
    return heard, result


def test_a_players_public_post_reaches_every_page_with_ids_for_the_omniscient_only(
    table, django_capture_on_commit_callbacks
):
    experiment, thorin = table
    heard, turn = write(
        experiment,
        django_capture_on_commit_callbacks,
        lambda: human_turn_create(
            experiment=experiment, user=thorin, speaker="Thorin", kind="action", content="I go."
        ),
    )
    assert heard.channels() == {"all", "public"}
    events = heard.events("turn")
    assert events["all"] == [{"turns": [turn.pk]}]
    assert events["public"] == [{}]  # no id, position or count for a player's page


def test_a_whisper_reaches_its_audience_only(table, django_capture_on_commit_callbacks):
    experiment, thorin = table
    heard, _turn = write(
        experiment,
        django_capture_on_commit_callbacks,
        lambda: human_turn_create(
            experiment=experiment,
            user=thorin,
            speaker="Thorin",
            kind="whisper",
            content="Is the door trapped?",
            visibility=["DM", "Thorin"],
        ),
    )
    assert heard.channels() == {"all", "role:DM", "role:Thorin"}
    assert heard.events("turn")["role:Thorin"] == [{}]


def test_a_monologue_reaches_its_speaker_only(table, django_capture_on_commit_callbacks):
    experiment, _thorin = table
    heard, _turn = write(
        experiment,
        django_capture_on_commit_callbacks,
        lambda: make_turn(experiment, speaker="Cassia", kind="monologue", content="Hmm."),
    )
    assert heard.channels() == {"all", "role:Cassia"}


def test_a_gm_note_and_its_edit_and_deletion_never_reach_a_player(
    table, owner, django_capture_on_commit_callbacks
):
    experiment, _thorin = table
    capture = django_capture_on_commit_callbacks
    heard, note = write(
        experiment,
        capture,
        lambda: note_create(
            experiment=experiment, user=owner, speaker="DM", content="The mimic wakes."
        ),
    )
    assert heard.channels() == {"all", "role:DM"}
    heard, _ = write(
        experiment,
        capture,
        lambda: note_update(turn=note, user=owner, content="The mimic sleeps."),
    )
    assert heard.channels() == {"all", "role:DM"}
    heard, _ = write(experiment, capture, lambda: note_delete(turn=note, user=owner))
    assert heard.channels() == {"all", "role:DM"}
    assert heard.events("turn")["all"] == [{"turns": [note.pk]}]
    assert not heard.channels() & {"public", *PLAYERS}


def test_an_edit_of_anothers_whisper_is_not_heard_by_a_player_outside_it(
    table, owner, django_capture_on_commit_callbacks
):
    experiment, _thorin = table
    whisper = make_turn(
        experiment, speaker="Cassia", kind="whisper", content="Hide.", visibility=["Cassia", "DM"]
    )
    heard, _ = write(
        experiment,
        django_capture_on_commit_callbacks,
        lambda: turn_edit(turn=whisper, user=owner, content="Hide, now."),
    )
    assert heard.channels() == {"all", "role:DM", "role:Cassia"}
    assert "role:Thorin" not in heard.channels(None)


def test_a_reveal_tells_the_readers_before_and_after(table, django_capture_on_commit_callbacks):
    experiment, _thorin = table
    whisper = make_turn(
        experiment, speaker="Thorin", kind="whisper", content="A key.", visibility=["DM", "Thorin"]
    )
    heard, _ = write(
        experiment,
        django_capture_on_commit_callbacks,
        lambda: turn_reveal(
            experiment=experiment, turn=whisper, visibility=["DM", "Thorin", "Cassia"]
        ),
    )
    assert heard.channels() == {"all", "role:DM", "role:Thorin", "role:Cassia"}
    assert "public" not in heard.channels(None)


def _held(experiment):
    return turn_hold(
        experiment=experiment,
        review=("DM",),
        quotes=[],
        round=1,
        speaker="Thorin",
        kind="action",
        content="Thorin says the mimic wakes.",
    )


def test_a_held_turn_is_heard_by_its_reviewers_only(table, django_capture_on_commit_callbacks):
    experiment, _thorin = table
    heard, turn = write(experiment, django_capture_on_commit_callbacks, lambda: _held(experiment))
    # Not the players it was meant for, not even its speaker; not the readers of the
    # published log ("all": judges, who never read a held turn).
    assert heard.channels() == {"owner", "held:DM"}
    assert heard.events("turn")["owner"] == [{"turns": [turn.pk]}]


def test_publishing_a_held_turn_tells_its_reviewers_and_then_its_audience(
    table, owner, django_capture_on_commit_callbacks
):
    experiment, _thorin = table
    turn = _held(experiment)
    heard, _ = write(
        experiment,
        django_capture_on_commit_callbacks,
        lambda: held_turn_publish(experiment=experiment, turn=turn, user=owner),
    )
    assert heard.channels() == {"owner", "held:DM", "all", "public"}
    assert heard.events("turn")["public"] == [{}]  # nothing says it was ever held


def test_discarding_a_held_turn_tells_its_reviewers_only(
    table, owner, django_capture_on_commit_callbacks
):
    experiment, _thorin = table
    turn = _held(experiment)
    pk = turn.pk
    heard, _ = write(
        experiment,
        django_capture_on_commit_callbacks,
        lambda: held_turn_discard(experiment=experiment, turn=turn, user=owner),
    )
    assert heard.channels() == {"owner", "held:DM"}
    assert heard.events("turn")["owner"] == [{"turns": [pk]}]


def test_a_write_that_is_rolled_back_tells_no_one(table, django_capture_on_commit_callbacks):
    experiment, thorin = table
    heard = Heard(experiment)
    with django_capture_on_commit_callbacks(execute=True):
        with pytest.raises(RuntimeError), transaction.atomic():
            make_turn(experiment, speaker="DM", kind="narrative", content="Gone.")
            raise RuntimeError("the request failed after the turn")
        with pytest.raises(ValidationError):
            human_turn_create(
                experiment=experiment, user=thorin, speaker="Thorin", kind="action", content=""
            )
    assert heard.channels(None) == set()
    assert not Turn.objects.filter(experiment=experiment, content="Gone.").exists()


def test_a_round_that_waits_for_a_human_tells_every_page_after_it_commits(
    table, owner, django_capture_on_commit_callbacks
):
    experiment, _thorin = table
    experiment.participants.exclude(role="Thorin").update(model="offline")
    experiment.participants.filter(role="Thorin").update(model="human")
    heard = Heard(experiment)
    with django_capture_on_commit_callbacks(execute=True):
        round_start(experiment=experiment, user=owner)
    job = Job.objects.get(experiment=experiment, kind=Job.Kind.ROUND)
    assert job.status == Job.Status.WAITING
    waiting = heard.events("waiting")
    round_ = job.result["round"]
    # Whom the round waits for is on every page's round bar (the cast is public): every
    # viewer reads exactly one of "all" and "public".
    assert {ch for ch, events in waiting.items() if events} == {"all", "public"}
    assert waiting["public"] == [{"round": round_, "role": "Thorin"}]
    # The event comes after the Job's waiting status is stored: last on its channel.
    public = [e for e in live.broker().read(experiment.pk, {"public": heard.start["public"]}, 0.05)]
    assert public[-1].event == "waiting"
