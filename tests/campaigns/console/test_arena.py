"""The Arena page `/campaigns/<id>/arena/`: owner and staff only; report, button, fragment."""

from __future__ import annotations

import copy

import pytest
from django.urls import reverse

from campaigns.models import ArenaRun, Job
from campaigns.services import transcripts
from context_engine.arena.generate import generate_campaign
from context_engine.arena.run import below_floor
from tests.factories import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def generated(owner):
    data = generate_campaign(rounds=22, players=2, seed=2)
    return transcripts.import_transcript(data=copy.deepcopy(data), owner=owner)


def url(experiment) -> str:
    return reverse("console:arena", args=[experiment.pk])


def test_anonymous_users_are_sent_to_log_in(client, generated):
    response = client.get(url(generated))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_strangers_get_404_and_players_403(client, generated):
    client.force_login(make_user("someone"))
    assert client.get(url(generated)).status_code == 404
    assert client.post(url(generated)).status_code == 404
    player = make_user("a_player")
    generated.participants.filter(role="Thorin").update(user=player)
    client.force_login(player)
    assert client.get(url(generated)).status_code == 403
    assert client.post(url(generated)).status_code == 403
    assert client.get(reverse("console:arena-plot", args=[generated.pk])).status_code == 403
    assert Job.objects.count() == 0
    assert client.get(reverse("console:arena", args=[999999])).status_code == 404


def test_the_owner_starts_a_run_and_sees_the_report(
    client, owner, generated, django_capture_on_commit_callbacks
):
    client.force_login(owner)
    page = client.get(url(generated))
    assert page.status_code == 200
    assert b"No Arena run yet." in page.content and b"Run the Arena" in page.content
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url(generated))
    assert response.status_code == 302 and response["Location"] == url(generated)
    run = ArenaRun.objects.get()
    assert len(run.report["results"]) == 21  # 7 strategies × 3 budgets, the defaults
    page = client.get(url(generated)).content.decode()
    rec = run.report["recommended"]
    if rec is None:  # on generated campaigns BM25 finds every invented word: see the floors
        assert "none — every configuration leaks or is below the bm25 floor" in page
    else:
        assert f"<code>{rec['strategy']}</code> at {rec['budget']} tokens" in page
    # Evidence recall: header + 21 configurations + 2 floors × 3 budgets; then the facts
    # table: header + 21 configurations.
    assert page.count("<tr") == 28 + 22
    below = [r for r in run.report["results"] if below_floor(r, run.report["floors"])]
    assert page.count("below bm25: never recommended") == len(below)
    assert "offline judge" in page and "<script>" not in page.split("</head>")[1]
    plot = client.get(reverse("console:arena-plot", args=[generated.pk]))
    assert plot.status_code == 200 and plot.content.startswith(b"\x89PNG")


def test_the_htmx_fragment_polls_while_running_and_stops_when_done(client, owner, generated):
    client.force_login(owner)
    job = Job.objects.create(experiment=generated, kind=Job.Kind.ARENA, progress=40)
    fragment = client.get(url(generated), headers={"HX-Request": "true"})
    body = fragment.content.decode()
    assert fragment.status_code == 200
    assert body.lstrip().startswith('<section id="arena-status"')
    assert 'hx-trigger="every 2s"' in body and "40%" in body and "<html" not in body
    Job.objects.filter(pk=job.pk).update(status=Job.Status.SUCCEEDED, progress=100)
    done = client.get(url(generated), headers={"HX-Request": "true"})
    assert done.status_code == 286 and done["HX-Refresh"] == "true"
    assert "every 2s" not in done.content.decode()


def test_no_report_means_no_plot(client, owner, generated):
    client.force_login(owner)
    assert client.get(reverse("console:arena-plot", args=[generated.pk])).status_code == 404
