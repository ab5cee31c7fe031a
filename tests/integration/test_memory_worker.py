"""Memory on real services: turns posted in this process are hydrated and summarised by a
real Celery worker process (real Redis, real PostgreSQL, a stand-in Gemini over HTTP);
the model server dies mid-run and the digest falls back without losing a turn; two
workers folding the same audience and range commit once."""

from __future__ import annotations

import contextlib

import pytest

from babel_site.celery import app
from campaigns import tasks
from campaigns.models import LoreEntry, Summary, Turn
from campaigns.services.experiments import experiment_update
from campaigns.services.memory import turns_for_audience
from tests.factories import make_turn
from tests.integration.worker import celery_worker, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]


@contextlib.contextmanager
def default_queue(queue: str):
    """Send tasks the services dispatch (after commit, plain ``apply_async``) to ``queue``."""
    previous = app.conf.task_default_queue
    app.conf.task_default_queue = queue
    try:
        yield
    finally:
        app.conf.task_default_queue = previous


def gemini_env(standin, timeout: int = 2) -> dict[str, str]:
    return {
        "GEMINI_API_KEY": "test",
        "GEMINI_BASE_URL": standin.url,
        "BABEL_LLM_TIMEOUT": str(timeout),
    }


def digest(experiment, key: str) -> Summary | None:
    return (
        Summary.objects.filter(experiment=experiment, kind="digest", audience_key=key)
        .order_by("-version")
        .first()
    )


def folded_ids(experiment, key: str) -> list[int]:
    ids: list[int] = []
    for summary in Summary.objects.filter(experiment=experiment, kind="digest", audience_key=key):
        ids += summary.source_turn_ids
    return sorted(ids)


def test_a_worker_builds_lore_and_digests_then_falls_back_when_the_model_dies(
    real_services, campaign, gemini_standin
):
    experiment_update(experiment=campaign, config={"memory_interval": 1})
    with (
        celery_worker(real_services, extra_env=gemini_env(gemini_standin)) as queue,
        default_queue(queue),
    ):
        make_turn(
            campaign,
            round=1,
            content="Thorin wedges a void-chisel into the seam. The void-chisel sings.",
        )
        make_turn(
            campaign,
            round=1,
            speaker="Cassia",
            kind="whisper",
            content="Cassia, to the DM: I read the tide-script aloud, quietly.",
            visibility=["Cassia", "DM"],
            hinge=True,
        )
        assert not LoreEntry.objects.exists(), "not eager: the worker does the work"
        make_turn(campaign, round=2, content="The Hollow Bell rings twice.", hinge=True)

        chisel = wait_for(
            lambda: LoreEntry.objects.filter(term="void-chisel", audience_key="*").first()
        )
        assert chisel.status == "proposed"
        wait_for(lambda: "(stand-in)" in LoreEntry.objects.get(pk=chisel.pk).definition)
        for key in ("|Thorin|", "|Cassia|", "|DM|"):  # one digest per participant
            first = wait_for(lambda key=key: digest(campaign, key))
            assert (first.method, first.model, first.round_to) == ("llm", "gemini-2.5-flash", 1)
        assert "tide-script" not in digest(campaign, "|Thorin|").text

        gemini_standin.stop()  # the model server goes away mid-campaign
        make_turn(campaign, round=2, content="Wren pockets a flask of ashfern tonic.")
        make_turn(
            campaign, round=3, content="The Geometers arrive. Fear the Geometers.", hinge=True
        )
        last = make_turn(campaign, round=4, content="Dawn over SaltMarch.")

        def fell_back(key):
            summary = digest(campaign, key)
            return summary if summary and summary.round_to == 3 else None

        hinges = {"|Thorin|": ["R2 DM:", "R3 DM:"], "|Cassia|": ["R1 Cassia:", "R3 DM:"]}
        for key, expected in hinges.items():
            latest = wait_for(lambda key=key: fell_back(key), timeout=60)
            assert (latest.method, latest.model) == ("fallback", "template")
            for hinge in expected:  # old hinges survive the fold, new ones are added
                assert hinge in dict(latest.sections)["Hinge Index"], (key, hinge)
        wait_for(lambda: LoreEntry.objects.filter(term="Geometers").exists())

    # No turn lost: every turn each audience may read up to round 3 was folded exactly once.
    for key, audience in (("|Thorin|", ["Thorin"]), ("|Cassia|", ["Cassia"])):
        expected = [
            t.pk for t in turns_for_audience(experiment=campaign, audience=audience, round_to=3)
        ]
        assert folded_ids(campaign, key) == expected
    assert last.pk not in folded_ids(campaign, "|Thorin|")  # round 4 is not over yet
    assert Turn.objects.filter(experiment=campaign).count() == 6


def test_two_workers_folding_the_same_audience_and_range_commit_once(
    real_services, campaign, gemini_standin
):
    for round_ in (1, 2):
        make_turn(campaign, round=round_, content=f"The tide turns, round {round_}.", hinge=True)
    gemini_standin.slow_seconds = 1.5  # both workers are inside the model call at once
    gemini_standin.set_default("slow")
    env = gemini_env(gemini_standin, timeout=10)
    with (
        celery_worker(real_services, extra_env=env) as first,
        celery_worker(real_services, extra_env=env) as second,
    ):
        results = [
            tasks.summarize_audience.apply_async(
                args=[campaign.pk, ["Cassia"], 2, True], queue=queue
            )
            for queue in (first, second)
        ]
        outcomes = sorted((r.get(timeout=60) for r in results), key=lambda o: len(o["created"]))
    assert len(gemini_standin.requests) >= 2, "both workers really asked the model"
    (only,) = Summary.objects.filter(experiment=campaign, kind="digest")
    assert outcomes == [{"created": []}, {"created": [only.pk]}]
    assert (only.version, only.method) == (1, "llm")
