"""Visibility is decided in one selector; these are its rules, on the real database."""

import pytest

from campaigns.models import Turn
from campaigns.reads import selectors
from campaigns.services.experiments import participant_create
from tests.factories import make_turn

pytestmark = pytest.mark.django_db


@pytest.fixture
def log(campaign):
    participant_create(experiment=campaign, role="Oracle", kind="judge")
    return {
        "public": make_turn(campaign, content="public narration"),
        "whisper": make_turn(
            campaign,
            speaker="Thorin",
            kind="whisper",
            content="thorin whispers",
            visibility=["Thorin", "DM"],
        ),
        "gm_note": make_turn(campaign, kind="gm_note", content="gm secret", visibility=["DM"]),
        "monologue": make_turn(
            campaign,
            speaker="Cassia",
            kind="monologue",
            content="cassia thinks",
            visibility=["Cassia"],
        ),
    }


def _contents(campaign, role):
    viewer = selectors.viewer_for_role(experiment=campaign, role=role)
    return {t.content for t in selectors.turns_visible_to(experiment=campaign, viewer=viewer)}


def test_a_whisper_reaches_its_sender_and_the_dm_only(campaign, log):
    assert "thorin whispers" in _contents(campaign, "Thorin")
    assert "thorin whispers" in _contents(campaign, "DM")
    assert "thorin whispers" not in _contents(campaign, "Cassia")


def test_a_gm_note_never_reaches_a_player(campaign, log):
    assert "gm secret" in _contents(campaign, "DM")
    assert "gm secret" not in _contents(campaign, "Thorin")
    assert "gm secret" not in _contents(campaign, "Cassia")


def test_the_dm_does_not_read_players_monologues(campaign, log):
    assert "cassia thinks" in _contents(campaign, "Cassia")
    assert "cassia thinks" not in _contents(campaign, "DM")


def test_a_judge_reads_the_raw_log(campaign, log):
    assert _contents(campaign, "Oracle") == {t.content for t in log.values()}


@pytest.mark.parametrize("corrupt", ["Thorin", {"roles": ["Thorin"]}, [], [1, 2], 7, True])
def test_corrupt_stored_visibility_fails_closed_to_dm_only(campaign, log, corrupt):
    Turn.objects.filter(pk=log["public"].pk).update(visibility=corrupt)
    assert "public narration" not in _contents(campaign, "Thorin")
    assert "public narration" not in _contents(campaign, "Cassia")
    assert "public narration" in _contents(campaign, "DM")
    turn = Turn.objects.get(pk=log["public"].pk)
    assert turn.effective_visibility() == ("DM",)


def test_unknown_role_is_reported_by_name(campaign):
    with pytest.raises(selectors.UnknownRole) as caught:
        selectors.viewer_for_role(experiment=campaign, role="Gandalf")
    assert "Gandalf" in str(caught.value)


def test_a_secret_is_read_by_its_owner_and_public_after_its_reveal_round(campaign):
    cassia = campaign.participants.get(role="Cassia")
    cassia.secret, cassia.reveal_round = "steal the codex", 5
    thorin = selectors.viewer_for_role(experiment=campaign, role="Thorin")
    me = selectors.viewer_for_role(experiment=campaign, role="Cassia")
    assert selectors.secret_readable(participant=cassia, viewer=me, round_now=1)
    assert not selectors.secret_readable(participant=cassia, viewer=thorin, round_now=5)
    assert selectors.secret_readable(participant=cassia, viewer=thorin, round_now=6)


def test_experiments_list_only_what_a_user_may_see(campaign, owner, player, stranger):
    assert list(selectors.experiments_for_user(owner)) == [campaign]
    assert list(selectors.experiments_for_user(player)) == [campaign]
    assert list(selectors.experiments_for_user(stranger)) == []


def test_an_identity_is_read_by_its_owner_and_judges_and_is_never_revealed(campaign):
    from campaigns.services.experiments import participant_create

    participant_create(experiment=campaign, role="Oracle", kind="judge")
    cassia = campaign.participants.get(role="Cassia")
    cassia.reveal_round = 0
    read = {
        role: selectors.identity_readable(
            participant=cassia, viewer=selectors.viewer_for_role(experiment=campaign, role=role)
        )
        for role in ("Cassia", "Thorin", "DM", "Oracle")
    }
    assert read == {"Cassia": True, "Thorin": False, "DM": False, "Oracle": True}


def _earlier_texts(campaign, role, turn):
    viewer = (
        selectors.OMNISCIENT
        if role is None
        else selectors.viewer_for_role(experiment=campaign, role=role)
    )
    return [
        r.old_content
        for r in selectors.turn_revisions_visible_to(
            experiment=campaign, viewer=viewer, turn_ids=[turn.pk]
        )
    ]


def test_a_revision_is_read_by_who_read_its_text_not_by_the_turns_new_audience(campaign, owner):
    from campaigns.services.notes import note_update
    from campaigns.services.reveals import turn_reveal

    note = make_turn(campaign, kind="gm_note", content="draft", visibility=["DM"])
    note_update(turn=note, user=owner, content="second")
    turn_reveal(experiment=campaign, turn=note, visibility=["DM", "Thorin"], user=owner)
    note_update(turn=Turn.objects.get(pk=note.pk), user=owner, content="third")

    assert _earlier_texts(campaign, None, note) == ["draft", "second"]
    assert _earlier_texts(campaign, "DM", note) == ["draft", "second"]
    assert _earlier_texts(campaign, "Thorin", note) == ["second"]
    assert _earlier_texts(campaign, "Cassia", note) == []


def test_a_revision_with_corrupt_visibility_fails_closed(campaign, owner):
    from campaigns.models import TurnRevision
    from campaigns.services.notes import note_update

    note = make_turn(campaign, kind="gm_note", content="draft", visibility=None)
    note_update(turn=note, user=owner, content="second")
    TurnRevision.objects.update(visibility={"not": "a list"})

    assert _earlier_texts(campaign, "Thorin", note) == []
    assert _earlier_texts(campaign, "DM", note) == ["draft"]
