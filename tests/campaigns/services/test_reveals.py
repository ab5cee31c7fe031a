"""The reveal service and the clock: an audience widens, the change is recorded, and the
re-derivation task runs after commit for the new audience (issue 10, ask 7)."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from campaigns.models import Turn, VisibilityChange
from campaigns.reads.selectors import lore_visible_to, summaries_visible_to, viewer_for_role
from campaigns.services.memory import run_command
from campaigns.services.relay import round_start
from campaigns.services.reveals import turn_reveal
from tests.factories import make_experiment, make_turn

pytestmark = pytest.mark.django_db
ROLES = ("DM", "Thorin", "Cassia")


def derived_text(campaign, role) -> str:
    """Everything derived that ``role`` reads: its World Bible and its digests."""
    viewer = viewer_for_role(experiment=campaign, role=role)
    lore = [f"{e.term} {e.definition}" for e in lore_visible_to(experiment=campaign, viewer=viewer)]
    digests = [s.text for s in summaries_visible_to(experiment=campaign, viewer=viewer)]
    return " ".join(lore + digests)


def folded_ids(campaign, role) -> set[int]:
    viewer = viewer_for_role(experiment=campaign, role=role)
    return {
        i
        for s in summaries_visible_to(experiment=campaign, viewer=viewer)
        for i in s.source_turn_ids
    }


def whisper_campaign(owner, capture, word="Vexmoor"):
    campaign = make_experiment(owner=owner)
    make_turn(campaign, round=1, content="Rain over the harbour.")
    whisper = make_turn(
        campaign,
        round=1,
        speaker="Cassia",
        kind="whisper",
        content=f"Cassia, to the DM: the {word} key is in the well. The {word} key hums.",
        visibility=["Cassia", "DM"],
        hinge=True,
    )
    make_turn(campaign, round=2, content="Morning. Gulls.")
    with capture(execute=True):
        run_command(experiment=campaign, command="checkpoint", user=owner)
    return campaign, whisper


def test_a_reveal_records_the_change_and_rederives_for_the_new_reader(
    owner, django_capture_on_commit_callbacks
):
    campaign, whisper = whisper_campaign(owner, django_capture_on_commit_callbacks)
    assert "Vexmoor" not in derived_text(campaign, "Thorin")
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        change = turn_reveal(
            experiment=campaign, turn=whisper, visibility=["Cassia", "DM", "Thorin"], user=owner
        )
    assert callbacks, "the re-derivation is sent after commit"
    change.refresh_from_db()
    assert change.old_visibility == ["Cassia", "DM"]
    assert change.new_visibility == ["Cassia", "DM", "Thorin"]
    assert change.round == campaign.current_round and change.user == owner
    assert Turn.objects.get(pk=whisper.pk).visibility == ["Cassia", "DM", "Thorin"]
    assert "Vexmoor" in derived_text(campaign, "Thorin")
    assert whisper.pk in folded_ids(campaign, "Thorin")


@pytest.mark.parametrize(
    ("visibility", "message"),
    [
        (["Cassia"], "A reveal only widens: DM would lose this turn."),
        (["DM", "Cassia"], "Name at least one role that cannot read this turn yet."),
        (["Cassia", "DM", "Nobody"], "Nobody"),
        ([], "null"),
    ],
)
def test_a_narrowing_or_empty_or_unknown_reveal_is_refused_naming_visibility(
    owner, django_capture_on_commit_callbacks, visibility, message
):
    campaign, whisper = whisper_campaign(owner, django_capture_on_commit_callbacks)
    with pytest.raises(ValidationError) as error:
        turn_reveal(experiment=campaign, turn=whisper, visibility=visibility, user=owner)
    assert message in " ".join(error.value.message_dict["visibility"])
    assert not VisibilityChange.objects.exists()
    assert Turn.objects.get(pk=whisper.pk).visibility == ["Cassia", "DM"]


def test_a_public_turn_cannot_be_revealed_again(owner):
    campaign = make_experiment(owner=owner)
    turn = make_turn(campaign, content="Everyone hears the bell.")
    with pytest.raises(ValidationError) as error:
        turn_reveal(experiment=campaign, turn=turn, visibility=None, user=owner)
    assert "already public" in error.value.message_dict["visibility"][0]


def test_the_clock_passing_a_reveal_round_records_the_secret_reveal_once(
    owner, django_capture_on_commit_callbacks
):
    campaign = make_experiment(owner=owner)
    campaign.participants.filter(role="Cassia").update(secret="Cassia is the heir.", reveal_round=2)
    make_turn(campaign, round=2, content="Round two.")
    assert not VisibilityChange.objects.exists()  # round 2 is not past the reveal round
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        make_turn(campaign, round=3, content="Round three.")
    change = VisibilityChange.objects.get()
    assert change.participant.role == "Cassia" and change.round == 3
    assert change.new_visibility is None and change.old_visibility == ["Cassia"]
    assert len(callbacks) >= 2  # the hydrator and the reveal's re-derivation
    make_turn(campaign, round=4, content="Round four.")
    assert VisibilityChange.objects.count() == 1


def test_a_round_start_that_passes_a_reveal_round_records_the_reveal(
    owner, django_capture_on_commit_callbacks
):
    campaign = make_experiment(owner=owner)
    campaign.participants.update(model="offline")
    campaign.participants.filter(role="Thorin").update(
        secret="Thorin owes the guild.", reveal_round=0
    )
    with django_capture_on_commit_callbacks(execute=True):
        job = round_start(experiment=campaign, user=owner)
    job.refresh_from_db()
    assert job.status == "succeeded", job.message
    assert VisibilityChange.objects.get().participant.role == "Thorin"


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    before=st.sampled_from([["DM", "Thorin"], ["Cassia", "DM"], ["Cassia", "Thorin"]]),
    extra=st.lists(st.sampled_from(ROLES), max_size=2, unique=True),
    public=st.booleans(),
)
def test_no_leak_before_a_reveal_and_only_the_new_audience_gains_after(
    owner, django_capture_on_commit_callbacks, before, extra, public
):
    """Before the reveal no one outside the turn's audience reads anything derived from it;
    after it, exactly the roles added gain it, and everyone else stays as they were."""
    campaign = make_experiment(owner=owner)
    make_turn(campaign, round=1, content="Rain over the harbour.")
    secret = make_turn(
        campaign,
        round=1,
        speaker=before[0],
        kind="whisper",
        content=f"{before[0]} says: the Qorthal sigil opens the vault. The Qorthal sigil glows.",
        visibility=before,
        hinge=True,
    )
    make_turn(campaign, round=2, content="Morning. Gulls.")
    with django_capture_on_commit_callbacks(execute=True):
        run_command(experiment=campaign, command="checkpoint", user=owner)
    for role in set(ROLES) - set(before):
        assert "Qorthal" not in derived_text(campaign, role), role
        assert secret.pk not in folded_ids(campaign, role), role
    after = None if public else sorted({*before, *extra})
    if after is not None and set(after) == set(before):
        return  # nothing to widen: the service refuses it (tested above)
    with django_capture_on_commit_callbacks(execute=True):
        turn_reveal(experiment=campaign, turn=secret, visibility=after, user=owner)
    for role in ROLES:
        may = after is None or role in after
        assert ("Qorthal" in derived_text(campaign, role)) == may, role
        assert (secret.pk in folded_ids(campaign, role)) == may, role
