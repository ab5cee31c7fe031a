"""Reveals re-derive: the widened audience gets the turn in its lore and digests; what was
derived before the reveal stays as it was; nothing is folded twice (issue 10, SPEC §4)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from campaigns import tasks
from campaigns.models import LoreEntry, Summary, Turn, VisibilityChange
from campaigns.reads.selectors import lore_visible_to, summaries_visible_to, viewer_for_role
from campaigns.services.memory import run_command
from tests.factories import make_experiment, make_turn

pytestmark = pytest.mark.django_db


def lore_terms(campaign, role) -> set[str]:
    viewer = viewer_for_role(experiment=campaign, role=role)
    return set(lore_visible_to(experiment=campaign, viewer=viewer).values_list("term", flat=True))


def folded(campaign, key) -> list[int]:
    ids: list[int] = []
    for summary in Summary.objects.filter(experiment=campaign, kind="digest", audience_key=key):
        ids += summary.source_turn_ids
    return ids


@pytest.fixture
def secret_turn(campaign, owner, django_capture_on_commit_callbacks):
    make_turn(campaign, round=1, content="Rain over the harbour.")
    whisper = make_turn(
        campaign,
        round=1,
        speaker="Cassia",
        kind="whisper",
        content="Cassia, to the DM: I hide the Quillstone in the well. The Quillstone hums.",
        visibility=["Cassia", "DM"],
        hinge=True,
    )
    make_turn(campaign, round=2, content="Morning. The gulls are loud.")
    with django_capture_on_commit_callbacks(execute=True):
        run_command(experiment=campaign, command="checkpoint", user=owner)
    return whisper


def reveal(turn: Turn, new, user) -> VisibilityChange:
    change = VisibilityChange.objects.create(
        experiment=turn.experiment,
        turn=turn,
        old_visibility=turn.visibility,
        new_visibility=new,
        round=2,
        user=user,
    )
    Turn.objects.filter(pk=turn.pk).update(visibility=new)
    return change


def test_a_revealed_whisper_reaches_the_new_audience_and_nothing_before_changes(
    campaign, owner, secret_turn
):
    assert "Quillstone" not in lore_terms(campaign, "Thorin")
    assert secret_turn.pk not in folded(campaign, "|Thorin|")
    before = list(
        Summary.objects.filter(experiment=campaign, audience_key="|Thorin|").values_list(
            "pk", "text", "source_turn_ids"
        )
    )
    private = LoreEntry.objects.get(term="Quillstone", audience_key="|Cassia|DM|")

    change = reveal(secret_turn, None, owner)
    result = tasks.rederive_reveal.apply(args=[change.pk]).get()

    assert "Quillstone" in lore_terms(campaign, "Thorin")
    public = LoreEntry.objects.get(term="Quillstone", audience_key="*")
    assert [t.pk for t in public.source_turns.all()] == [secret_turn.pk]
    # The old entry was kept for its audience, never widened.
    private.refresh_from_db()
    assert private.audience == ["Cassia", "DM"]
    # Thorin's digest chain now holds the turn, exactly once, in a new version.
    assert folded(campaign, "|Thorin|").count(secret_turn.pk) == 1
    assert result["digests"]
    still = Summary.objects.filter(pk__in=[pk for pk, _, _ in before])
    assert sorted(still.values_list("pk", "text", "source_turn_ids")) == sorted(before)
    # A rerun adds nothing, and the next checkpoint folds no turn twice.
    assert tasks.rederive_reveal.apply(args=[change.pk]).get() == {"digests": []}
    make_turn(campaign, round=3, content="Noon. The Quillstone is common talk now.")
    run_command(experiment=campaign, command="checkpoint", user=owner)
    ids = folded(campaign, "|Thorin|")
    assert len(ids) == len(set(ids))
    assert LoreEntry.objects.filter(term="Quillstone", audience_key="*").count() == 1


def test_a_reveal_to_one_more_player_does_not_reach_the_others(campaign, owner, secret_turn):
    change = reveal(secret_turn, ["Cassia", "DM", "Thorin"], owner)
    tasks.rederive_reveal.apply(args=[change.pk]).get()
    assert "Quillstone" in lore_terms(campaign, "Thorin")
    assert secret_turn.pk in folded(campaign, "|Thorin|")
    others = set(LoreEntry.objects.values_list("audience_key", flat=True))
    assert "*" not in {
        k for k in others if LoreEntry.objects.filter(audience_key=k, term="Quillstone").exists()
    }


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(widened=st.sampled_from([["Cassia", "DM", "Thorin"], None, ["Cassia", "DM"]]))
def test_after_any_reveal_a_role_gets_the_turn_only_if_it_may_read_it_now(
    owner, django_capture_on_commit_callbacks, widened
):
    campaign = make_experiment(owner=owner)  # a fresh campaign per example
    make_turn(campaign, round=1, content="Rain over the harbour.")
    whisper = make_turn(
        campaign,
        round=1,
        speaker="Cassia",
        kind="whisper",
        content="Cassia, to the DM: the Zorvquill sleeps. The Zorvquill wakes at dusk.",
        visibility=["Cassia", "DM"],
        hinge=True,
    )
    make_turn(campaign, round=2, content="Morning; gulls.")  # digests cover past the whisper
    with django_capture_on_commit_callbacks(execute=True):
        run_command(experiment=campaign, command="checkpoint", user=owner)
    change = reveal(whisper, widened, owner)
    tasks.rederive_reveal.apply(args=[change.pk]).get()
    for role in ("Thorin", "Cassia", "DM"):
        may = widened is None or role in widened
        viewer = viewer_for_role(experiment=campaign, role=role)
        lore = " ".join(
            f"{e.term} {e.definition}" for e in lore_visible_to(experiment=campaign, viewer=viewer)
        )
        digests = summaries_visible_to(experiment=campaign, viewer=viewer)
        sources = [i for s in digests for i in s.source_turn_ids]
        assert ("Zorvquill" in lore) == may, role
        assert (whisper.pk in sources) == may, role
