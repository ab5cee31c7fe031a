"""`manage.py generate_campaign` and `manage.py arena` (table, --json, --plot, --judge)."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from campaigns.models import Experiment
from campaigns.services import transcripts
from campaigns.services.arena import ArenaParams, arena_report
from context_engine.arena.generate import generate_campaign

pytestmark = pytest.mark.django_db

RESULT_KEYS = {
    "strategy",
    "budget",
    "retention",
    "hinge_retention",
    "mean_tokens",
    "max_tokens",
    "build_ms_median",
    "leaks",
    "evidence_recall",
    "evidence_by_category",
    "evidence_tokens",
    "evidence_pairs",
}


def run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_generate_campaign_writes_the_seeded_transcript_or_imports_it(tmp_path):
    path = tmp_path / "campaign.json"
    text = run(
        "generate_campaign", "--rounds", "40", "--players", "3", "--seed", "5", "--out", path
    )
    assert "facts" in text
    written = transcripts.loads(path.read_text())
    assert written == generate_campaign(rounds=40, players=3, seed=5)
    assert Experiment.objects.count() == 0
    text = run("generate_campaign", "--rounds", "40", "--players", "3", "--seed", "5")
    experiment = Experiment.objects.get()
    assert f"Imported experiment {experiment.pk}" in text
    assert experiment.facts.count() == len(written["facts"])
    with pytest.raises(CommandError, match="rounds"):
        run("generate_campaign", "--rounds", "3")


@pytest.fixture
def experiment():
    return transcripts.import_transcript(data=generate_campaign(rounds=40, players=2, seed=8))


def test_arena_prints_the_table_and_writes_the_json_and_the_plot(experiment, tmp_path):
    report_path, plot_path = tmp_path / "arena.json", tmp_path / "arena.png"
    text = run(
        "arena", experiment.pk, "--budgets", "4000", "13000", "--every", "20",
        "--json", report_path, "--plot", plot_path,
    )  # fmt: skip
    report = json.loads(report_path.read_text())
    assert set(report) == {
        "experiment",
        "checkpoints",
        "full_history_tokens",
        "results",
        "recommended",
        "floors",
        "questions",
    }
    assert report["experiment"] == experiment.pk
    assert [(f["strategy"], f["budget"]) for f in report["floors"]] == [
        ("recency", 4000),
        ("recency", 13000),
        ("bm25", 4000),
        ("bm25", 13000),
    ]
    assert report["questions"]["questions"] == experiment.questions.count() > 0
    assert report["checkpoints"] == [20, 40]
    assert len(report["results"]) == 14
    assert all(set(r) == RESULT_KEYS for r in report["results"])
    assert plot_path.read_bytes().startswith(b"\x89PNG")
    for row in report["results"]:
        assert row["strategy"] in text
    assert "evidence recall" in text and "(floor)" in text
    assert "below the bm25 floor at its budget is never recommended" in text
    bm25 = {f["budget"]: f["evidence_recall"] for f in report["floors"] if f["strategy"] == "bm25"}
    rec = report["recommended"]
    if rec is None:
        assert "recommended: none" in text
    else:
        chosen = next(
            r for r in report["results"] if (r["strategy"], r["budget"]) == tuple(rec.values())
        )
        assert chosen["evidence_recall"] >= bm25[rec["budget"]]
        assert f"recommended: {rec['strategy']}" in text
    assert "bar (layered @ 13000)" in text and "facts: " in text and "(declared)" in text


def test_arena_derives_facts_for_a_campaign_that_declares_none(experiment):
    experiment.facts.all().delete()
    text = run("arena", experiment.pk, "--strategies", "layered", "--budgets", "13000")
    assert "(derived)" in text


def test_arena_rejects_bad_arguments_naming_them(experiment):
    with pytest.raises(CommandError, match="roles"):
        run("arena", experiment.pk, "--roles", "Nobody")
    with pytest.raises(CommandError, match="judge"):
        run("arena", experiment.pk, "--judge", "gpt-9")
    with pytest.raises(CommandError, match="No experiment"):
        run("arena", 999999)


def test_a_model_judge_without_a_backend_is_the_offline_judge_and_says_so(experiment, settings):
    settings.GEMINI_API_KEY = ""
    text = run("arena", experiment.pk, "--strategies", "layered", "--budgets", "13000",
               "--judge", "gemini-2.5-flash")  # fmt: skip
    assert "model judge not used: gemini-2.5-flash: no model backend configured" in text


def test_a_failing_model_judge_falls_back_and_the_report_says_so(
    experiment, settings, gemini_standin
):
    settings.GEMINI_API_KEY = "standin-key"
    settings.GEMINI_BASE_URL = gemini_standin.base_url
    settings.LLM_TIMEOUT_SECONDS = 2
    gemini_standin.set_default("500")
    text = run("arena", experiment.pk, "--strategies", "layered", "--budgets", "13000",
               "--roles", "Thorin", "--judge", "gemini-2.5-flash")  # fmt: skip
    assert "model judge gemini-2.5-flash" in text
    assert "fell back to the offline judge" in text
    assert len(gemini_standin.requests) >= 1


def test_a_working_model_judge_agrees_with_what_the_packs_hold(
    experiment, settings, gemini_standin, tmp_path
):
    settings.GEMINI_API_KEY = "standin-key"
    settings.GEMINI_BASE_URL = gemini_standin.base_url
    settings.LLM_TIMEOUT_SECONDS = 5
    args = ["arena", experiment.pk, "--strategies", "layered", "sliding_window", "--budgets",
            "13000", "--every", "20", "--roles", "Thorin"]  # fmt: skip
    run(*args, "--json", tmp_path / "offline.json")
    text = run(*args, "--judge", "gemini-2.5-flash", "--json", tmp_path / "model.json")
    offline = json.loads((tmp_path / "offline.json").read_text())["results"]
    model = json.loads((tmp_path / "model.json").read_text())["results"]
    assert [r["retention"] for r in model] == [r["retention"] for r in offline]
    assert "fell back" not in text and len(gemini_standin.requests) > 0


def test_the_report_loads_the_history_once_whatever_its_length():
    """No query per pack: the same handful of queries at 20 rounds and at 60."""
    counts = []
    for rounds in (20, 60):
        experiment = transcripts.import_transcript(
            data=generate_campaign(rounds=rounds, players=2, seed=rounds)
        )
        experiment = Experiment.objects.get(pk=experiment.pk)
        params = ArenaParams(strategies=("layered", "full_history"), budgets=(8000,), every=5)
        with CaptureQueriesContext(connection) as captured:
            report, _ = arena_report(experiment=experiment, params=params)
        assert len(report["checkpoints"]) == rounds // 5
        counts.append(len(captured.captured_queries))
    assert counts[0] == counts[1] <= 6, counts


def test_bench_recall_scores_a_transcript_file_in_memory(tmp_path, django_assert_num_queries):
    data = generate_campaign(rounds=24, players=2, seed=4)
    path = tmp_path / "campaign.json"
    path.write_text(transcripts.dumps(data))
    with django_assert_num_queries(0):
        text = run("bench_recall", path, "--budgets", "2000", "--strategies", "layered")
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["strategy", "budget", "recall"]
    assert {"multi", "secret", "single", "when"} <= set(lines[0].split())
    rows = {line.split()[0] for line in lines[2:] if line and not line[0].isdigit()}
    assert {"layered", "recency", "bm25"} <= rows
    assert f"{len(data['questions'])} questions" in text


def test_bench_recall_takes_a_questions_file_over_the_turn_keys(tmp_path):
    data = generate_campaign(rounds=24, players=2, seed=4)
    path, questions = tmp_path / "campaign.json", tmp_path / "questions.json"
    path.write_text(transcripts.dumps(data))
    first = data["turns"][0]
    asked = {
        "question": first["content"].split(".")[0] + "?",  # shares its words: BM25 finds it
        "answer": "rain",
        "evidence": [first["key"]],
        "category": "weather",
        "asked_at_round": first["round"],
    }
    questions.write_text(json.dumps({"questions": [asked]}))
    text = run("bench_recall", path, "--budgets", "2000", "--strategies", "full_history",
               "--questions", questions)  # fmt: skip
    header = text.splitlines()[0].split()
    assert "weather" in header and "secret" not in header
    assert "1 questions" in text
    # Asked at round 1 with its own words, the round's narration fits either floor first.
    floors = [line.split() for line in text.splitlines() if line.startswith(("recency", "bm25"))]
    assert floors and all(f[2] == "100.0%" for f in floors)
    asked["evidence"] = ["missing"]
    questions.write_text(json.dumps({"questions": [asked]}))
    with pytest.raises(CommandError, match=r"questions\[0\]\.evidence\[0\]"):
        run("bench_recall", path, "--questions", questions)
