"""/checkpoint, /compress and /clear on the demo campaign: digests per audience, the World
Bible, and no leaks — offline, with a stand-in Gemini answering, and with it failing."""

from __future__ import annotations

import re

import pytest
from django.core.exceptions import ValidationError

from campaigns import demo
from campaigns.models import ContextEvent, Job, LoreEntry, LoreRevision, Summary
from campaigns.services import transcripts
from campaigns.services.experiments import experiment_update, participant_create
from campaigns.services.memory import memory_job_run, run_command
from context_engine.memory.template import FACTS
from context_engine.types import DIGEST_HEADINGS
from tests.campaigns.services.memory_support import leaks, use_gemini
from tests.factories import make_turn

pytestmark = pytest.mark.django_db

DEMO_AUDIENCES = [["Cassia"], ["DM"], ["Thorin"], ["Wren"]]
COINED = [
    "tide-script",
    "lantern-moss",
    "brinewick oil",
    "ashfern tonic",
    "void-chisel",
    "ember-glass",
    "salt-ghosts",
]
# "Tide Codex" is named once in public (then "the Codex"): one mention is not an entry.
NAMES = ["Maelis Orrow", "Geometers", "SaltMarch", "KESTREL", "Hollow Bell", "Codex"]


@pytest.fixture
def demo_campaign(owner):
    return transcripts.import_transcript(data=demo.transcript(), owner=owner)


def checkpoint(experiment, user, capture, **kwargs):
    with capture(execute=True):
        job = run_command(experiment=experiment, command="checkpoint", user=user, **kwargs)
    job.refresh_from_db()
    return job


def headings(text: str) -> list[str]:
    return re.findall(r"^## (.+)$", text, flags=re.MULTILINE)


def latest_digests(experiment) -> dict[tuple[str, ...], Summary]:
    latest: dict[tuple[str, ...], Summary] = {}
    for summary in Summary.objects.filter(experiment=experiment, kind="digest").order_by("version"):
        latest[tuple(summary.audience)] = summary
    return latest


def public_terms(experiment) -> set[str]:
    return set(experiment.lore.filter(audience_key="*").values_list("term", flat=True))


def assert_no_player_leaks(experiment):
    for role in ("Thorin", "Cassia", "Wren"):
        assert leaks(experiment, role) == [], role


# -- offline (no API key) -----------------------------------------------------------------


def test_checkpoint_on_the_demo_gives_each_audience_a_digest_with_the_headings_and_facts(
    demo_campaign, owner, django_capture_on_commit_callbacks
):
    job = checkpoint(demo_campaign, owner, django_capture_on_commit_callbacks)

    assert job.status == Job.Status.SUCCEEDED and job.progress == 100
    assert job.result["audiences"] == DEMO_AUDIENCES
    digests = latest_digests(demo_campaign)
    assert sorted(list(a) for a in digests) == DEMO_AUDIENCES
    last_seq = demo_campaign.turns.order_by("-seq").first().seq
    for summary in digests.values():
        assert headings(summary.text) == [*DIGEST_HEADINGS, FACTS]
        assert re.search(r"^- R\d+ \w+", dict(summary.sections)[FACTS], flags=re.MULTILINE)
        assert (summary.method, summary.model) == ("fallback", "offline")
        assert summary.round_to == 13
        assert summary.covered_seq <= last_seq
    event = ContextEvent.objects.get(experiment=demo_campaign)
    assert (event.command, event.round, event.seq, event.user) == (
        "checkpoint",
        13,
        last_seq,
        owner,
    )
    assert event.cleared_without_checkpoint is False


def test_every_hinge_an_audience_can_read_is_in_its_digest(
    demo_campaign, owner, django_capture_on_commit_callbacks
):
    checkpoint(demo_campaign, owner, django_capture_on_commit_callbacks)
    from campaigns.services.memory import turns_for_audience

    for audience, summary in latest_digests(demo_campaign).items():
        hinge_index = dict(summary.sections)["Hinge Index"]
        hinges = [
            t for t in turns_for_audience(experiment=demo_campaign, audience=audience) if t.hinge
        ]
        assert hinges, audience
        for turn in hinges:
            assert f"R{turn.round} {turn.speaker}:" in hinge_index, (audience, turn.seq)


def test_the_world_bible_holds_the_demo_coined_terms_including_lowercase_ones(
    demo_campaign, owner, django_capture_on_commit_callbacks
):
    checkpoint(demo_campaign, owner, django_capture_on_commit_callbacks)
    terms = public_terms(demo_campaign)
    for term in COINED:
        assert term in terms, term
    for name in NAMES:  # names may carry a title: "Archivist Maelis Orrow"
        assert any(name in term for term in terms), name
    tonic = demo_campaign.lore.get(term="ashfern tonic", audience_key="*")
    assert tonic.status == "proposed" and tonic.origin == "extracted"
    assert "ashfern tonic" in tonic.definition.lower()
    assert tonic.first_seen_round == 6 and tonic.mention_count >= 3
    # The DM's locked entry from the demo is untouched by the hydrator.
    script = demo_campaign.lore.get(term="tide-script")
    assert script.locked and script.mention_count == 6
    assert not LoreRevision.objects.filter(entry=script, actor__startswith="task:").exists()


def test_no_player_digest_lore_or_pack_holds_another_players_whisper_a_gm_note_or_a_secret(
    demo_campaign, owner, django_capture_on_commit_callbacks
):
    checkpoint(demo_campaign, owner, django_capture_on_commit_callbacks)
    assert_no_player_leaks(demo_campaign)
    # What the demo hides must really be hidden from the others, and shown to its owner.
    cassia_whisper = "the codex binds to you"
    digests = latest_digests(demo_campaign)
    assert cassia_whisper in digests[("Cassia",)].text.lower()
    assert cassia_whisper in digests[("DM",)].text.lower()
    for role in ("Thorin", "Wren"):
        assert cassia_whisper not in digests[(role,)].text.lower()
    gm_lore = demo_campaign.lore.filter(audience_key="|DM|")
    assert gm_lore.exists()
    assert all("Truth" not in e.definition for e in demo_campaign.lore.exclude(audience_key="|DM|"))


def test_the_leak_detector_finds_a_planted_leak(
    demo_campaign, owner, django_capture_on_commit_callbacks
):
    checkpoint(demo_campaign, owner, django_capture_on_commit_callbacks)
    thorin = latest_digests(demo_campaign)[("Thorin",)]
    whisper = demo_campaign.turns.get(kind="whisper", speaker="DM", round=7)
    Summary.objects.filter(pk=thorin.pk).update(text=thorin.text + "\n- " + whisper.content)
    found = leaks(demo_campaign, "Thorin", with_pack=False)
    assert found and all("whisper" in line for line in found)


def test_a_second_checkpoint_with_nothing_new_adds_nothing(
    demo_campaign, owner, django_capture_on_commit_callbacks
):
    checkpoint(demo_campaign, owner, django_capture_on_commit_callbacks)
    counts = (Summary.objects.count(), LoreEntry.objects.count(), LoreRevision.objects.count())
    job = checkpoint(demo_campaign, owner, django_capture_on_commit_callbacks)
    assert job.status == Job.Status.SUCCEEDED
    assert job.result["lore_created"] == 0 and job.result["lore_updated"] == 0
    assert (
        Summary.objects.count(),
        LoreEntry.objects.count(),
        LoreRevision.objects.count(),
    ) == counts
    assert ContextEvent.objects.filter(experiment=demo_campaign).count() == 2


def test_checkpoint_after_new_turns_folds_only_the_new_ones(
    demo_campaign, owner, django_capture_on_commit_callbacks
):
    checkpoint(demo_campaign, owner, django_capture_on_commit_callbacks)
    before = latest_digests(demo_campaign)
    with django_capture_on_commit_callbacks(execute=True):
        turn = make_turn(
            demo_campaign,
            round=14,
            content="The KESTREL drops anchor off the Drowned Stair.",
            tags=["thread:anchorage"],
            hinge=True,
        )
    checkpoint(demo_campaign, owner, django_capture_on_commit_callbacks)
    after = latest_digests(demo_campaign)
    for audience, summary in after.items():
        assert summary.version == before[audience].version + 1
        assert summary.previous_id == before[audience].pk
        assert summary.source_turn_ids == [turn.pk]
        assert "anchorage" in dict(summary.sections)["Open Threads"]


def test_checkpoint_for_one_role_updates_only_its_audience(
    demo_campaign, owner, django_capture_on_commit_callbacks
):
    job = checkpoint(demo_campaign, owner, django_capture_on_commit_callbacks, role="Wren")
    assert job.result["audiences"] == [["Wren"]]
    assert [s.audience for s in Summary.objects.filter(kind="digest")] == [["Wren"]]
    assert ContextEvent.objects.get().role == "Wren"


def test_compress_updates_digests_and_clear_does_not(
    demo_campaign, owner, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        cleared = run_command(experiment=demo_campaign, command="clear", user=owner)
    assert cleared.status == Job.Status.SUCCEEDED
    assert not Summary.objects.exists()
    event = ContextEvent.objects.get(command="clear")
    assert event.cleared_without_checkpoint is True and event.user == owner

    with django_capture_on_commit_callbacks(execute=True):
        compressed = run_command(experiment=demo_campaign, command="compress", user=owner)
    compressed.refresh_from_db()
    assert compressed.kind == "compress" and compressed.status == Job.Status.SUCCEEDED
    assert len(latest_digests(demo_campaign)) == 4
    assert ContextEvent.objects.get(command="compress").cleared_without_checkpoint is False


def test_bad_commands_and_roles_are_rejected_naming_the_field(demo_campaign, owner):
    participant_create(experiment=demo_campaign, role="Oracle", kind="judge")
    with pytest.raises(ValidationError) as bad_command:
        run_command(experiment=demo_campaign, command="explode", user=owner)
    assert "command" in bad_command.value.message_dict
    for role in ("Nobody", "Oracle"):
        with pytest.raises(ValidationError) as bad_role:
            run_command(experiment=demo_campaign, command="checkpoint", user=owner, role=role)
        assert "role" in bad_role.value.message_dict
    assert not ContextEvent.objects.exists() and not Job.objects.exists()


def test_a_job_that_fails_ends_failed_with_the_reason(demo_campaign, owner):
    job = Job.objects.create(experiment=demo_campaign, kind="checkpoint", result={})
    finished = memory_job_run(job=job)
    assert finished.status == Job.Status.FAILED
    assert "KeyError" in finished.message
    # A finished job is not run again.
    assert memory_job_run(job=finished).status == Job.Status.FAILED


def test_a_checkpoint_sends_its_job_only_after_commit(
    demo_campaign, owner, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        job = run_command(experiment=demo_campaign, command="checkpoint", user=owner)
    assert len(callbacks) == 1
    assert Job.objects.get(pk=job.pk).status == Job.Status.PENDING
    assert not Summary.objects.exists()
    callbacks[0]()
    assert Job.objects.get(pk=job.pk).status == Job.Status.SUCCEEDED


# -- with a stand-in Gemini server -------------------------------------------------------


def test_with_gemini_answering_the_digests_come_from_the_model_and_still_leak_nothing(
    demo_campaign, owner, settings, gemini_standin, django_capture_on_commit_callbacks
):
    use_gemini(settings, gemini_standin)
    checkpoint(demo_campaign, owner, django_capture_on_commit_callbacks)
    digests = latest_digests(demo_campaign)
    assert sorted(list(a) for a in digests) == DEMO_AUDIENCES
    for summary in digests.values():
        assert (summary.method, summary.model) == ("llm", "gemini-2.5-flash")
        assert headings(summary.text) == list(DIGEST_HEADINGS)
        assert "(stand-in)" in summary.text
    # Each prompt carried only its audience's turns: Cassia's whisper went to hers alone.
    prompts = [r.prompt for r in gemini_standin.requests if "Hinge Index" in r.prompt]
    assert len(prompts) == 4
    whisper = "the Codex binds to you"
    assert sum(whisper in prompt for prompt in prompts) == 2  # Cassia's and the DM's
    # Definitions came from the model too, for entries the hydrator proposed.
    tonic = demo_campaign.lore.get(term="ashfern tonic", audience_key="*")
    assert "(stand-in)" in tonic.definition
    assert LoreRevision.objects.filter(entry=tonic, actor="task:define").exists()
    assert_no_player_leaks(demo_campaign)


@pytest.mark.parametrize("failure", ["500", "malformed_json", "slow"])
def test_with_gemini_failing_every_audience_gets_the_template_and_nothing_leaks(
    failure, demo_campaign, owner, settings, gemini_standin, django_capture_on_commit_callbacks
):
    use_gemini(settings, gemini_standin)
    settings.LLM_TIMEOUT_SECONDS = 1
    gemini_standin.slow_seconds = 1.5
    gemini_standin.set_default(failure)
    job = checkpoint(demo_campaign, owner, django_capture_on_commit_callbacks)
    assert job.status == Job.Status.SUCCEEDED
    assert "template fallback" in job.message
    digests = latest_digests(demo_campaign)
    assert sorted(list(a) for a in digests) == DEMO_AUDIENCES
    for summary in digests.values():
        assert (summary.method, summary.model) == ("fallback", "template")
        assert headings(summary.text) == [*DIGEST_HEADINGS, FACTS]
    assert gemini_standin.requests, "the model was really asked"
    terms = public_terms(demo_campaign)
    assert {"brinewick oil", "ashfern tonic", "void-chisel"} <= terms
    assert_no_player_leaks(demo_campaign)


def test_with_gemini_leaving_out_a_heading_every_digest_is_repaired_and_nothing_leaks(
    demo_campaign, owner, settings, gemini_standin, django_capture_on_commit_callbacks
):
    use_gemini(settings, gemini_standin)
    # Its own client, so the definer's failures (every answer misses a field) do not
    # trip the summarizer's circuit breaker.
    config = {**demo_campaign.config, "summarizer_model": "gemini-2.0-pro"}
    experiment_update(experiment=demo_campaign, config=config)
    gemini_standin.set_default("missing_heading")  # every digest answer lacks "open_threads"
    job = checkpoint(demo_campaign, owner, django_capture_on_commit_callbacks)
    assert job.status == Job.Status.SUCCEEDED
    assert "4 repaired from the offline digest" in job.message
    for summary in latest_digests(demo_campaign).values():
        assert (summary.method, summary.model) == ("repaired", "gemini-2.0-pro")
        assert headings(summary.text) == list(DIGEST_HEADINGS)
        sections = dict(summary.sections)
        assert "(stand-in)" in sections["Hinge Index"]
        assert "(stand-in)" not in sections["Open Threads"]  # filled offline
    assert_no_player_leaks(demo_campaign)
