"""Digests per audience: who shares one, what goes in, versions, due rule, races, faults."""

from __future__ import annotations

import pytest

from campaigns.models import Summary
from campaigns.reads.selectors import summaries_visible_to, viewer_for_role
from campaigns.services.experiments import experiment_update, participant_create
from campaigns.services.memory import (
    audiences_for,
    strategic_update,
    summarize_audience,
    summarize_one,
    summary_restore,
)
from campaigns.services.memory.digests import commit_digest, plan_digest
from context_engine.types import DIGEST_HEADINGS
from tests.campaigns.services.memory_support import use_gemini
from tests.factories import make_turn

pytestmark = pytest.mark.django_db


def fold(experiment, audience, round_to):
    (summary,) = summarize_audience(
        experiment=experiment, audience=audience, round_to=round_to, force=True
    )
    return summary


def digest_of(experiment, *audience) -> Summary | None:
    return (
        Summary.objects.filter(experiment=experiment, kind="digest", audience=sorted(audience))
        .order_by("-version")
        .first()
    )


def hinge_index(summary: Summary) -> str:
    return dict(summary.sections)["Hinge Index"]


@pytest.fixture
def fog(campaign):
    """Public story, a Thorin↔DM whisper, a GM note and a Cassia monologue, each a hinge."""
    return {
        "public": make_turn(campaign, round=1, content="The Mirrorgate opens at dusk.", hinge=True),
        "whisper": make_turn(
            campaign,
            round=1,
            speaker="Thorin",
            kind="whisper",
            content="I pocket the Quillstone while nobody looks.",
            visibility=["Thorin", "DM"],
            hinge=True,
            tags=["thread:quillstone"],
        ),
        "gm_note": make_turn(
            campaign,
            round=1,
            kind="gm_note",
            content="The Quillstone is cursed by the Ashen Prior.",
            visibility=["DM"],
            hinge=True,
            tags=["npc:Ashen Prior"],
        ),
        "monologue": make_turn(
            campaign,
            round=1,
            speaker="Cassia",
            kind="monologue",
            content="I will sell the map to the Gullwardens.",
            hinge=True,
        ),
    }


# -- audiences ---------------------------------------------------------------------------


def test_every_reader_has_a_digest_audience_of_their_own(campaign):
    """Never a group of readers with identical views: whether Thorin shared a digest with
    the DM depended on what the DM reads and Thorin does not (issue 23, finding 5)."""
    participant_create(experiment=campaign, role="Oracle", kind="judge")
    make_turn(campaign, content="Rain over the harbour.")
    assert audiences_for(experiment=campaign) == [("Cassia",), ("DM",), ("Thorin",)]
    make_turn(campaign, kind="gm_note", content="Note.", visibility=["DM"])
    make_turn(
        campaign, speaker="Thorin", kind="whisper", content="Psst.", visibility=["Thorin", "DM"]
    )
    assert audiences_for(experiment=campaign) == [("Cassia",), ("DM",), ("Thorin",)]


def test_a_digest_is_made_only_from_turns_every_member_may_read(campaign, fog):
    summarize_audience(experiment=campaign, audience=None, round_to=1, force=True)
    thorin, cassia, dm = (digest_of(campaign, r) for r in ("Thorin", "Cassia", "DM"))

    assert thorin.source_turn_ids == [fog["public"].pk, fog["whisper"].pk]
    assert cassia.source_turn_ids == [fog["public"].pk]
    assert dm.source_turn_ids == [fog["public"].pk, fog["whisper"].pk, fog["gm_note"].pk]
    assert "Quillstone" in thorin.text and "quillstone" in dict(thorin.sections)["Open Threads"]
    assert "Quillstone" not in cassia.text and "Ashen Prior" not in cassia.text
    assert "Ashen Prior" in dm.text and "Ashen Prior" not in thorin.text
    # Monologues reach nobody's digest, not even their speaker's.
    for summary in (thorin, cassia, dm):
        assert "Gullwardens" not in summary.text
        assert fog["monologue"].pk not in summary.source_turn_ids


def test_each_role_reads_only_its_own_audiences_digest(campaign, fog):
    summarize_audience(experiment=campaign, audience=None, round_to=1, force=True)
    for role in ("Thorin", "Cassia", "DM"):
        viewer = viewer_for_role(experiment=campaign, role=role)
        audiences = [s.audience for s in summaries_visible_to(experiment=campaign, viewer=viewer)]
        assert audiences == [[role]], role


def test_an_explicit_audience_reads_the_intersection_of_its_members_views(campaign, fog):
    (summary,) = summarize_audience(
        experiment=campaign, audience=["Thorin", "Cassia"], round_to=1, force=True
    )
    assert summary.audience == ["Cassia", "Thorin"]
    assert summary.source_turn_ids == [fog["public"].pk]


# -- versions, idempotency, races ---------------------------------------------------------


def test_rerunning_a_summary_adds_nothing(campaign, fog):
    first = summarize_audience(experiment=campaign, audience=None, round_to=1, force=True)
    assert len(first) == 3
    assert summarize_audience(experiment=campaign, audience=None, round_to=1, force=True) == []
    assert Summary.objects.filter(kind="digest").count() == 3


def test_two_workers_folding_the_same_audience_and_range_commit_once(campaign, fog):
    plans = [plan_digest(experiment=campaign, audience=["Cassia"], round_to=1) for _ in "ab"]
    assert plans[0].version == plans[1].version == 1
    winner = commit_digest(experiment=campaign, plan=plans[0])
    loser = commit_digest(experiment=campaign, plan=plans[1])
    assert winner is not None and loser is None
    assert Summary.objects.filter(kind="digest", audience_key="|Cassia|").count() == 1
    # The loser's service call finds nothing left to fold.
    assert summarize_one(experiment=campaign, audience=["Cassia"], round_to=1, force=True) is None


def test_a_race_with_a_later_range_folds_the_rest_on_top_of_the_winner(campaign, fog):
    make_turn(campaign, round=2, content="The Mirrorgate closes.", hinge=True)
    stale = plan_digest(experiment=campaign, audience=["Cassia"], round_to=2)
    early = commit_digest(
        experiment=campaign, plan=plan_digest(experiment=campaign, audience=["Cassia"], round_to=1)
    )
    assert commit_digest(experiment=campaign, plan=stale) is None  # version 1 was taken
    latest = summarize_one(experiment=campaign, audience=["Cassia"], round_to=2, force=True)
    assert (latest.version, latest.previous_id) == (2, early.pk)
    assert "R2 DM:" in hinge_index(latest) and "R1 DM:" in hinge_index(latest)


def test_a_fold_keeps_the_previous_hinges_and_adds_only_new_turns(campaign, fog):
    (v1,) = summarize_audience(experiment=campaign, audience=["Cassia"], round_to=1, force=True)
    new = make_turn(campaign, round=2, content="The bell tolls for the Gullwardens.", hinge=True)
    (v2,) = summarize_audience(experiment=campaign, audience=["Cassia"], round_to=2, force=True)
    assert (v2.version, v2.previous_id, v2.source_turn_ids) == (2, v1.pk, [new.pk])
    assert (v2.round_from, v2.round_to, v2.covered_seq) == (1, 2, new.seq)
    assert "R1 DM:" in hinge_index(v2) and "R2 DM:" in hinge_index(v2)
    assert [h for h, _ in v2.sections] == list(DIGEST_HEADINGS)


def test_restoring_an_old_version_makes_a_new_version_and_later_folds_continue_from_it(
    campaign, fog, owner
):
    (v1,) = summarize_audience(experiment=campaign, audience=["Cassia"], round_to=1, force=True)
    later = make_turn(campaign, round=2, content="Fog swallows the pier.", hinge=True)
    (v2,) = summarize_audience(experiment=campaign, audience=["Cassia"], round_to=2, force=True)

    v3 = summary_restore(summary=v1, user=owner)
    assert (v3.version, v3.text, v3.covered_seq, v3.previous_id) == (
        3,
        v1.text,
        v1.covered_seq,
        v2.pk,
    )
    assert Summary.objects.filter(pk__in=[v1.pk, v2.pk]).count() == 2  # nothing deleted
    # The next fold picks the turns after the restored coverage up again.
    (v4,) = summarize_audience(experiment=campaign, audience=["Cassia"], round_to=2, force=True)
    assert v4.version == 4 and v4.source_turn_ids == [later.pk]
    assert v4.covered_seq == v2.covered_seq and "R2 DM:" in hinge_index(v4)


# -- the due rule --------------------------------------------------------------------------


def test_without_a_milestone_an_audience_waits_for_the_memory_interval(campaign):
    experiment_update(experiment=campaign, config={"memory_interval": 3})
    for round_ in (0, 1, 2, 3):
        make_turn(campaign, round=round_, content=f"Quiet waves, round {round_}.")
    assert summarize_audience(experiment=campaign, audience=None, round_to=1) == []
    created = summarize_audience(experiment=campaign, audience=None, round_to=2)
    assert [s.round_to for s in created] == [2, 2, 2]  # each reader's: rounds 0, 1, 2
    assert summarize_audience(experiment=campaign, audience=None, round_to=3) == []


def test_a_milestone_makes_only_the_audience_that_saw_it_due_at_once(campaign):
    make_turn(campaign, round=1, content="Quiet waves.")
    make_turn(
        campaign,
        round=1,
        speaker="Thorin",
        kind="whisper",
        content="I pick up the brass key.",
        visibility=["Thorin", "DM"],
    )
    created = summarize_audience(experiment=campaign, audience=None, round_to=1)
    assert [s.audience for s in created] == [["DM"], ["Thorin"]]
    assert digest_of(campaign, "Cassia") is None


def test_a_new_npc_is_a_milestone_but_a_known_one_is_not(campaign):
    experiment_update(experiment=campaign, config={"memory_interval": 10})
    make_turn(campaign, round=1, content="Vane smiles.", tags=["npc:Vane"])
    assert len(summarize_audience(experiment=campaign, audience=None, round_to=1)) == 3
    make_turn(campaign, round=2, content="Vane smiles again.", tags=["npc:Vane"])
    assert summarize_audience(experiment=campaign, audience=None, round_to=2) == []
    make_turn(campaign, round=3, content="Mira waves.", tags=["npc:Mira"])
    assert len(summarize_audience(experiment=campaign, audience=None, round_to=3)) == 3


# -- strategic summaries ------------------------------------------------------------------


def test_older_monologues_become_the_speakers_own_strategic_summary(campaign):
    thoughts = [
        "I will betray the Gullwardens at dawn.",
        "The map is forged; keep it.",
        "Thorin suspects me.",
        "Tonight I burn the ledger.",
    ]
    for index, thought in enumerate(thoughts, start=1):
        make_turn(campaign, round=index, speaker="Cassia", kind="monologue", content=thought)
    summary = strategic_update(experiment=campaign, role="Cassia")
    assert summary.kind == "strategic" and summary.audience == ["Cassia"]
    assert "Gullwardens" in summary.text and "forged" in summary.text
    assert "suspects" not in summary.text and "burn" not in summary.text  # last two stay raw
    assert strategic_update(experiment=campaign, role="Cassia") is None  # nothing new
    for role in ("DM", "Thorin"):
        viewer = viewer_for_role(experiment=campaign, role=role)
        assert not summaries_visible_to(experiment=campaign, viewer=viewer).exists()
    assert strategic_update(experiment=campaign, role="Thorin") is None


# -- what an offline digest holds ------------------------------------------------------------


def test_an_offline_digest_of_untagged_history_holds_facts_with_their_rounds(campaign):
    for round_ in range(1, 9):
        make_turn(campaign, round=round_, content="The road is long and the day is grey again.")
        make_turn(campaign, round=round_, speaker="Cassia", content="I walk on and say nothing.")
    make_turn(campaign, round=3, content="The ferryman Osric asks 40 silver crowns on 2 June.")
    make_turn(campaign, round=5, speaker="Cassia", content="I decided to buy the Saltmere map.")
    make_turn(
        campaign,
        round=6,
        speaker="Thorin",
        kind="whisper",
        content="I stole the Quillstone from Osric.",
        visibility=["Thorin", "DM"],
    )
    make_turn(
        campaign, round=7, kind="gm_note", content="Osric is the Ashen Prior.", visibility=["DM"]
    )
    cassia = dict(fold(campaign, ["Cassia"], 8).sections)["Key Facts"]
    assert "- R3 DM: The ferryman Osric asks 40 silver crowns on 2 June." in cassia
    assert "- R5 Cassia: I decided to buy the Saltmere map." in cassia
    assert "Quillstone" not in cassia and "Ashen Prior" not in cassia
    dm = dict(fold(campaign, ["DM"], 8).sections)["Key Facts"]
    assert "- R6 Thorin (whisper): I stole the Quillstone from Osric." in dm
    assert "- R7 DM (GM note): Osric is the Ashen Prior." in dm


# -- model faults --------------------------------------------------------------------------


def test_a_model_digest_missing_a_heading_is_stored_repaired_from_the_offline_digest(
    campaign, fog, settings, gemini_standin
):
    use_gemini(settings, gemini_standin)
    gemini_standin.script(["missing_heading"])  # the answer has no "open_threads"
    summary = fold(campaign, ["DM"], 1)
    assert (summary.method, summary.model) == ("repaired", "gemini-2.5-flash")
    assert len(gemini_standin.requests) == 1
    sections = dict(summary.sections)
    assert [h for h, _ in summary.sections] == list(DIGEST_HEADINGS)
    assert "(stand-in)" in sections["Hinge Index"]
    assert sections["Open Threads"].startswith("- quillstone:")  # from the whisper's tag


@pytest.mark.parametrize(
    "script",
    [["500", "500", "500"], ["429", "429", "429"], ["malformed_json"]],
    ids=["500", "429", "malformed"],
)
def test_when_the_model_fails_the_fallback_keeps_every_hinge(
    script, campaign, fog, settings, gemini_standin
):
    use_gemini(settings, gemini_standin)
    gemini_standin.script(script)
    (summary,) = summarize_audience(experiment=campaign, audience=["DM"], round_to=1, force=True)
    assert (summary.method, summary.model) == ("fallback", "template")
    assert len(gemini_standin.requests) == len(script)
    for key in ("public", "whisper", "gm_note"):
        turn = fog[key]
        assert f"R{turn.round} {turn.speaker}:" in hinge_index(summary)
        assert turn.content.split()[1] in hinge_index(summary)
    assert [h for h, _ in summary.sections] == list(DIGEST_HEADINGS)


def test_a_transient_error_is_retried_and_the_models_digest_kept(
    campaign, fog, settings, gemini_standin
):
    use_gemini(settings, gemini_standin)
    gemini_standin.script(["500", "429"])
    summary = fold(campaign, ["Thorin"], 1)
    assert (summary.method, summary.model) == ("llm", "gemini-2.5-flash")
    assert [r.behaviour for r in gemini_standin.requests] == ["500", "429", "ok"]
    assert "(stand-in)" in summary.text
    assert "R1 Thorin:" in hinge_index(summary)  # a hinge the model kept or was given back


def test_the_summarizer_model_is_chosen_by_the_experiment_config(
    campaign, fog, settings, gemini_standin
):
    use_gemini(settings, gemini_standin)
    experiment_update(experiment=campaign, config={"summarizer_model": "gemini-2.0-pro"})
    summary = fold(campaign, ["Cassia"], 1)
    assert summary.model == "gemini-2.0-pro"
    assert {r.model for r in gemini_standin.requests} == {"gemini-2.0-pro"}
    experiment_update(experiment=campaign, config={"summarizer_model": "offline"})
    make_turn(campaign, round=2, content="Dawn.", hinge=True)
    offline = fold(campaign, ["Cassia"], 2)
    assert (offline.method, offline.model) == ("fallback", "offline")


def test_an_openai_compatible_server_can_write_the_digest_and_fail_over_to_the_template(
    campaign, fog, settings, openai_standin
):
    settings.OPENAI_BASE_URL = openai_standin.base_url
    settings.LLM_TIMEOUT_SECONDS = 2
    settings.BABEL_LLM_RETRY_BASE_DELAY = 0.01
    experiment_update(experiment=campaign, config={"summarizer_model": "openai:llama3.1"})
    summary = fold(campaign, ["Thorin"], 1)
    assert (summary.method, summary.model) == ("llm", "llama3.1")
    assert {r.model for r in openai_standin.requests} == {"llama3.1"}
    assert "Quillstone" in openai_standin.requests[0].prompt  # Thorin's own whisper
    assert "Ashen Prior" not in openai_standin.requests[0].prompt  # the GM note is not his

    openai_standin.set_default("500")
    make_turn(campaign, round=2, content="The Mirrorgate shuts.", hinge=True)
    failed = fold(campaign, ["Thorin"], 2)
    assert (failed.method, failed.model, failed.version) == ("fallback", "template", 2)
    assert "R1 Thorin:" in hinge_index(failed) and "R2 DM:" in hinge_index(failed)


def test_a_memory_model_this_process_cannot_reach_falls_back_and_says_why(
    campaign, fog, settings, caplog
):
    settings.OPENAI_BASE_URL = ""
    experiment_update(experiment=campaign, config={"memory_model": "openai:llama3.1"})
    with caplog.at_level("WARNING", logger="campaigns.services.memory.backends"):
        summary = fold(campaign, ["Thorin"], 1)
    assert summary.method == "fallback"
    (warning,) = [r.getMessage() for r in caplog.records if "openai:llama3.1" in r.getMessage()]
    assert "OPENAI_BASE_URL" in warning and "extractive engine" in warning


def test_a_campaigns_memory_model_and_server_are_what_the_workers_use(
    campaign, fog, settings, local_server
):
    server = local_server("ollama")
    server.served = ["qwen2.5"]
    settings.BABEL_LLM_RETRY_BASE_DELAY = 0.01
    experiment_update(
        experiment=campaign,
        config={"memory_model": "ollama:qwen2.5", "memory_base_url": server.base_url},
    )
    summary = fold(campaign, ["Thorin"], 1)
    assert (summary.method, summary.model) == ("llm", "qwen2.5")
    assert {r.model for r in server.calls} == {"qwen2.5"}


def test_a_restore_records_who_restored_which_version(campaign, owner):
    from campaigns.services.memory import summary_restore

    first = Summary.objects.create(
        experiment=campaign,
        kind="digest",
        audience=["Thorin"],
        audience_key="|Thorin|",
        round_to=2,
        covered_seq=2,
        text="FIRST",
        version=1,
    )
    restored = summary_restore(summary=first, user=owner)
    restored.refresh_from_db()
    assert (restored.restored_from_id, restored.restored_by_id) == (first.pk, owner.pk)
    assert restored.version == 2 and restored.text == "FIRST"
    assert (first.restored_from_id, first.restored_by_id) == (None, None)
