"""Fix a turn (issue 24 ask 4): `turn_edit` keeps the old text as a revision and what was
derived from it follows; `step_regenerate_*` asks a model's step again through the relay
(the real google-genai SDK against the Gemini stand-in), replacing the texts of the turns
that step wrote, or leaving every old text when the model fails."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from campaigns.models import (
    Job,
    LoreEntry,
    ModelCall,
    RoundStep,
    Summary,
    Turn,
    TurnRevision,
    VocabularyStat,
)
from campaigns.reads import selectors
from campaigns.services import memory
from campaigns.services.context import pack_for_role
from campaigns.services.experiments import experiment_update
from campaigns.services.lore import lore_create
from campaigns.services.relay import round_start, steps
from campaigns.services.turn_fixes import step_regenerate_start, turn_edit
from tests.campaigns.services.memory_support import use_gemini
from tests.factories import make_turn
from tests.standins.server import Reply

pytestmark = pytest.mark.django_db

MODEL = "gemini-2.5-flash"
DM_NARRATION = "PUBLIC: The tide drops and the door groans.\nGM NOTE: The door is a mimic."
THORIN_ACTS = "PUBLIC: Thorin dives for the door.\nWHISPER to DM: Is there a draught?"
CASSIA_ACTS = "PUBLIC: Cassia waits on the pier."
DM_ANSWERS = "WHISPER to Thorin: A cold draught from below."


# -- edit ----------------------------------------------------------------------------


def test_an_edit_keeps_the_old_text_as_a_revision(campaign, owner):
    turn = make_turn(campaign, content="The tide turns.")
    turn_edit(turn=turn, user=owner, content="The tide turns red.")

    turn.refresh_from_db()
    assert turn.content == "The tide turns red."
    (revision,) = TurnRevision.objects.filter(turn=turn)
    assert (revision.action, revision.old_content, revision.new_content, revision.user) == (
        "edit",
        "The tide turns.",
        "The tide turns red.",
        owner,
    )
    assert (revision.seq, revision.visibility) == (turn.seq, None)


@pytest.mark.parametrize(
    ("content", "why"),
    [("", "non-empty"), ("   ", "non-empty"), (7, "non-empty"), ("x" * 100_001, "limit")],
)
def test_a_bad_edit_is_a_400_on_content_and_stores_nothing(campaign, owner, content, why):
    turn = make_turn(campaign, content="The tide turns.")
    with pytest.raises(ValidationError) as caught:
        turn_edit(turn=turn, user=owner, content=content)
    assert why in caught.value.message_dict["content"][0]
    turn.refresh_from_db()
    assert turn.content == "The tide turns."
    assert not TurnRevision.objects.exists()


def test_the_same_text_is_no_edit(campaign, owner):
    turn = make_turn(campaign, content="The tide turns.")
    turn_edit(turn=turn, user=owner, content="The tide turns.")
    assert not TurnRevision.objects.exists()


def test_a_held_turn_is_corrected_on_the_held_page_not_here(campaign, owner):
    turn = make_turn(campaign, content="The tide turns.", held=True)
    with pytest.raises(ValidationError) as caught:
        turn_edit(turn=turn, user=owner, content="Other words.")
    assert "held" in caught.value.message_dict["turn"][0]
    assert not TurnRevision.objects.exists()


def test_the_next_pack_reads_the_new_text(campaign, owner):
    turn = make_turn(campaign, content="Thorin finds a brass key.")
    before = pack_for_role(experiment=campaign, role="Cassia", input_text="go")
    assert "brass key" in str(before)
    turn_edit(turn=turn, user=owner, content="Thorin finds a silver coin.")
    after = pack_for_role(experiment=campaign, role="Cassia", input_text="go")
    assert "silver coin" in str(after) and "brass key" not in str(after)


def test_the_digests_that_folded_the_turn_are_folded_again_from_the_new_text(
    campaign, owner, django_capture_on_commit_callbacks
):
    turn = make_turn(campaign, round=1, content="Thorin steals the Abbot's ledger.")
    make_turn(campaign, round=2, content="The bell rings twice.")
    memory.summarize_audience(experiment=campaign, audience=["Cassia"], round_to=1, force=True)
    digest = Summary.objects.filter(experiment=campaign, kind="digest").latest("version")
    assert turn.pk in digest.source_turn_ids and "ledger" in digest.text

    with django_capture_on_commit_callbacks(execute=True):
        turn_edit(turn=turn, user=owner, content="Thorin returns the Abbot's candle.")

    chain = Summary.objects.filter(experiment=campaign, audience_key=digest.audience_key)
    latest = chain.latest("version")
    assert latest.version >= digest.version + 2  # rewound, then folded again
    assert "ledger" not in latest.text
    assert "candle" in latest.text


def test_lore_sourced_from_the_turn_follows_the_edit(campaign, owner):
    turn = make_turn(campaign, content="Thorin meets Vane at the Salt Gate. Vane smiles.")
    other = make_turn(campaign, content="The Salt Gate is shut at night.")
    gone = LoreEntry.objects.create(
        experiment=campaign,
        term="Vane",
        key="vane",
        definition="Thorin meets Vane at the Salt Gate.",
    )
    gone.source_turns.add(turn)
    kept = LoreEntry.objects.create(
        experiment=campaign,
        term="Salt Gate",
        key="salt gate",
        definition="Thorin meets Vane at the Salt Gate.",
    )
    kept.source_turns.add(turn, other)
    dm_made = lore_create(
        experiment=campaign,
        user=owner,
        term="Lady Vane",
        category="term",
        definition="The DM's own words.",
        audience=None,
    )
    dm_made.source_turns.add(turn)

    turn_edit(turn=turn, user=owner, content="Thorin waits at the Salt Gate alone.")

    gone.refresh_from_db()
    kept.refresh_from_db()
    dm_made.refresh_from_db()
    assert gone.status == "rejected" and not gone.source_turns.exists()
    assert gone.revisions.get().changes["source"] == [turn.seq, None]
    # The term is still there: the turn stays a source, its quoted sentence follows.
    assert set(kept.source_turns.all()) == {turn, other}
    assert kept.definition == "Thorin waits at the Salt Gate alone."
    # A person's entry is never rewritten by an edit.
    assert (dm_made.definition, dm_made.status) == ("The DM's own words.", "confirmed")
    assert turn in dm_made.source_turns.all()


def test_lore_whose_term_left_the_turn_is_quoted_from_its_next_source(campaign, owner):
    turn = make_turn(campaign, content="The Salt Gate creaks.")
    other = make_turn(campaign, content="Beyond the Salt Gate lies the marsh.")
    entry = LoreEntry.objects.create(
        experiment=campaign, term="Salt Gate", key="salt gate", definition="The Salt Gate creaks."
    )
    entry.source_turns.add(turn, other)
    turn_edit(turn=turn, user=owner, content="The door creaks.")
    entry.refresh_from_db()
    assert entry.status != "rejected"
    assert list(entry.source_turns.all()) == [other]
    assert entry.definition == "Beyond the Salt Gate lies the marsh."


# -- regenerate ----------------------------------------------------------------------


@pytest.fixture
def table(campaign, settings, gemini_standin, monkeypatch):
    use_gemini(settings, gemini_standin)
    settings.BABEL_LLM_RETRY_BASE_DELAY = 0.01
    campaign.participants.update(model=MODEL)
    experiment_update(
        experiment=campaign, config={"summarizer_model": "offline", "definer_model": "offline"}
    )
    monkeypatch.setattr(steps, "_sleep", lambda _s: None)
    return campaign


@pytest.fixture
def played(table, owner, gemini_standin, django_capture_on_commit_callbacks):
    gemini_standin.script(
        [Reply(DM_NARRATION), Reply(THORIN_ACTS), Reply(CASSIA_ACTS), Reply(DM_ANSWERS)]
    )
    with django_capture_on_commit_callbacks(execute=True):
        job = round_start(experiment=table, user=owner)
    job.refresh_from_db()
    assert job.status == "succeeded", job.message
    gemini_standin.reset()
    return table


def regenerate(turn, user, capture):
    with capture(execute=True):
        job = step_regenerate_start(turn=turn, user=user)
    job.refresh_from_db()
    return job


def thorin_turns(experiment):
    return list(
        Turn.objects.filter(experiment=experiment, speaker="Thorin")
        .order_by("seq")
        .values_list("kind", "content", "visibility")
    )


def test_regenerate_asks_the_model_again_with_the_pack_of_now_and_replaces_the_steps_turns(
    played, owner, gemini_standin, django_capture_on_commit_callbacks
):
    action = Turn.objects.get(experiment=played, speaker="Thorin", kind="action")
    later = make_turn(played, round=1, content="The DM adds: the pier is slick with weed.")
    seqs = list(Turn.objects.filter(experiment=played).values_list("pk", "seq"))
    gemini_standin.script(
        [Reply("PUBLIC: Thorin knocks twice instead.\nWHISPER to DM: Does anyone answer?")]
    )
    job = regenerate(action, owner, django_capture_on_commit_callbacks)

    assert (job.kind, job.status, job.progress) == ("regenerate", "succeeded", 100), job.message
    assert thorin_turns(played) == [
        ("action", "Thorin knocks twice instead.", None),
        ("whisper", "Does anyone answer?", ["DM", "Thorin"]),
    ]
    # One call, for Thorin's act step, with the pack Thorin reads now (the later turn in).
    (call,) = gemini_standin.calls
    assert "your turn, Thorin" in call.prompt and "slick with weed" in call.prompt
    assert "mimic" not in call.prompt
    # Both old texts are revisions; no turn moved, none was added.
    olds = sorted(TurnRevision.objects.values_list("old_content", flat=True))
    assert olds == ["Is there a draught?", "Thorin dives for the door."]
    assert list(Turn.objects.filter(experiment=played).values_list("pk", "seq")) == seqs
    assert later.pk in dict(seqs)
    # Counted apart from the step it replaced.
    keys = set(
        ModelCall.objects.filter(experiment=played, role="Thorin").values_list("key", flat=True)
    )
    assert "round:1:act:Thorin" in keys
    assert f"round:1:act:Thorin:regen:{job.pk.hex}" in keys


def test_when_the_model_fails_after_retries_the_old_text_stays_and_the_job_says_why(
    played, owner, gemini_standin, django_capture_on_commit_callbacks
):
    action = Turn.objects.get(experiment=played, speaker="Thorin", kind="action")
    before = thorin_turns(played)
    gemini_standin.script(["500", "500", "500"])
    job = regenerate(action, owner, django_capture_on_commit_callbacks)

    assert job.status == "failed"
    assert "500" in job.message and "old text stays" in job.message
    assert len(gemini_standin.calls) == 3
    assert thorin_turns(played) == before
    assert not TurnRevision.objects.exists()
    failed = ModelCall.objects.filter(experiment=played, key__contains=":regen:")
    assert failed.exists() and failed.exclude(status="ok").exists()


def test_a_new_text_the_guard_holds_is_not_applied(
    played, owner, gemini_standin, django_capture_on_commit_callbacks
):
    """Thorin's public action may not quote the DM's GM note (hidden from the players)."""
    action = Turn.objects.get(experiment=played, speaker="Thorin", kind="action")
    note = Turn.objects.get(experiment=played, kind="gm_note")
    turn_edit(
        turn=note,
        user=owner,
        content="The door is a mimic that wakes at the third bell and eats the bold.",
    )
    gemini_standin.script(
        [Reply("PUBLIC: The door is a mimic that wakes at the third bell and eats the bold.")]
    )
    job = regenerate(action, owner, django_capture_on_commit_callbacks)
    assert job.status == "failed", job.message
    assert "guard" in job.message
    action.refresh_from_db()
    assert action.content == "Thorin dives for the door."
    assert not TurnRevision.objects.filter(turn=action).exists()


def test_a_task_run_twice_replaces_once(
    played, owner, gemini_standin, django_capture_on_commit_callbacks
):
    from campaigns.services.turn_fixes import step_regenerate_run

    action = Turn.objects.get(experiment=played, speaker="Thorin", kind="action")
    gemini_standin.script([Reply("PUBLIC: Thorin knocks.")])
    job = regenerate(action, owner, django_capture_on_commit_callbacks)
    assert job.status == "succeeded"
    again = step_regenerate_run(job_id=job.pk)
    assert again.status == "succeeded"
    assert len(gemini_standin.calls) == 1
    assert TurnRevision.objects.filter(turn=action).count() == 1


def test_a_new_item_of_another_audience_never_lands_in_a_turn(
    played, owner, gemini_standin, django_capture_on_commit_callbacks
):
    """A whisper in the new answer never becomes the text of a public turn."""
    action = Turn.objects.get(experiment=played, speaker="Cassia", kind="action")
    gemini_standin.script([Reply("WHISPER to DM: I saw the mimic move.")])
    job = regenerate(action, owner, django_capture_on_commit_callbacks)
    assert job.status == "failed"
    action.refresh_from_db()
    assert action.content == "Cassia waits on the pier."


@pytest.mark.parametrize("which", ["human", "system", "person_post"])
def test_only_a_models_step_is_regenerated(played, owner, which):
    if which == "human":
        played.participants.filter(role="Cassia").update(model="human")
        turn = Turn.objects.get(experiment=played, speaker="Cassia", kind="action")
    elif which == "system":
        turn = make_turn(played, round=1, kind="system", content="Relay: note.", visibility=["DM"])
    else:
        turn = make_turn(played, round=1, content="The owner's own narration.")
    with pytest.raises(ValidationError) as caught:
        step_regenerate_start(turn=turn, user=owner)
    assert "turn" in caught.value.message_dict
    assert not Job.objects.filter(kind="regenerate").exists()


def test_one_regeneration_per_step_at_a_time(played, owner):
    action = Turn.objects.get(experiment=played, speaker="Thorin", kind="action")
    step_regenerate_start(turn=action, user=owner)  # no commit callbacks: stays pending
    whisper = Turn.objects.get(experiment=played, speaker="Thorin", kind="whisper")
    with pytest.raises(ValidationError) as caught:
        step_regenerate_start(turn=whisper, user=owner)
    assert "already" in caught.value.message_dict["turn"][0]
    assert Job.objects.filter(kind="regenerate").count() == 1
    assert RoundStep.objects.filter(experiment=played, speaker="Thorin").count() == 1


def test_revisions_are_read_only_by_who_read_the_turn(campaign, owner):
    whisper = make_turn(
        campaign, kind="whisper", speaker="Thorin", visibility=["DM", "Thorin"], content="psst"
    )
    public = make_turn(campaign, content="Hello all.")
    turn_edit(turn=whisper, user=owner, content="psst, again")
    turn_edit(turn=public, user=owner, content="Hello, all.")
    cassia = selectors.viewer_for_role(experiment=campaign, role="Cassia")
    thorin = selectors.viewer_for_role(experiment=campaign, role="Thorin")
    ids = [whisper.pk, public.pk]
    seen = selectors.turn_revisions_visible_to(experiment=campaign, viewer=cassia, turn_ids=ids)
    assert [r.old_content for r in seen] == ["Hello all."]
    seen = selectors.turn_revisions_visible_to(experiment=campaign, viewer=thorin, turn_ids=ids)
    assert [r.old_content for r in seen] == ["psst", "Hello all."]


def _stat_sources(experiment, key):
    row = VocabularyStat.objects.filter(experiment=experiment, key=key).first()
    return set(row.source_turn_ids or ()) if row else set()


def test_the_world_bible_evidence_follows_the_edit_and_a_rerun_adds_nothing(
    campaign, owner, django_capture_on_commit_callbacks
):
    turn = make_turn(campaign, content="Captain Morrow sails the Kestrel into Saltmarch.")
    make_turn(campaign, content="Captain Morrow waves from the deck.")
    memory.hydrate_experiment(experiment=campaign)
    assert turn.pk in _stat_sources(campaign, "kestrel")
    assert not _stat_sources(campaign, "gullwing")

    with django_capture_on_commit_callbacks(execute=True):
        turn_edit(
            turn=turn, user=owner, content="Captain Morrow sails the Gullwing into Saltmarch."
        )
    assert turn.pk not in _stat_sources(campaign, "kestrel")
    assert turn.pk in _stat_sources(campaign, "gullwing")
    assert turn.pk in _stat_sources(campaign, "saltmarch")
    rows = list(VocabularyStat.objects.filter(experiment=campaign).values_list("key", "turns"))

    again = memory.edit_rehydrate(revision=TurnRevision.objects.get(turn=turn))
    assert again == {"removed": 0, "added": 0}
    assert (
        list(VocabularyStat.objects.filter(experiment=campaign).values_list("key", "turns")) == rows
    )


def test_a_weak_answer_gets_the_relay_s_repair_request_when_regenerated(
    played, owner, gemini_standin, django_capture_on_commit_callbacks
):
    from tests.standins.answers import UNLABELLED

    action = Turn.objects.get(experiment=played, speaker="Cassia", kind="action")
    gemini_standin.script(["unlabelled_repairable", "unlabelled_repairable"])
    job = regenerate(action, owner, django_capture_on_commit_callbacks)
    assert job.status == "succeeded", job.message
    action.refresh_from_db()
    assert action.content == UNLABELLED.strip()
    keys = set(ModelCall.objects.filter(role="Cassia").values_list("key", flat=True))
    assert f"round:1:act:Cassia:regen:{job.pk.hex}:repair" in keys


def test_an_answer_still_unusable_after_the_repair_leaves_the_old_text(
    played, owner, gemini_standin, django_capture_on_commit_callbacks
):
    action = Turn.objects.get(experiment=played, speaker="Cassia", kind="action")
    gemini_standin.script(["unlabelled", "unlabelled"])
    job = regenerate(action, owner, django_capture_on_commit_callbacks)
    assert job.status == "failed"
    assert len(gemini_standin.calls) == 2  # the answer, then one repair request
    action.refresh_from_db()
    assert action.content == "Cassia waits on the pier."
    assert not TurnRevision.objects.exists()
    assert not Turn.objects.filter(experiment=played, needs_review=True).exists()
