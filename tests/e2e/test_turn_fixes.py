"""Fix a turn in a real browser (issue 24 ask 4): on the demo, after a round the models
played, the DM edits a turn inline (the earlier text shows under it) and regenerates a
model's turn (confirmed, then the row says how the job ended); Thorin's timeline shows
the new text and never a fix button. Screenshots under ``artifacts/console/``."""

from __future__ import annotations

import pytest

from campaigns.models import Job, Turn, TurnRevision
from campaigns.services.relay import round_start
from tests.e2e.test_console import demo, shot, sign_in  # noqa: F401 (demo is a fixture)
from tests.factories import make_turn
from tests.integration.worker import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def test_the_dm_edits_and_regenerates_turns_in_the_browser(browser, live_server, demo):  # noqa: F811
    demo.participants.update(model="offline")
    owner = demo.owner
    round_start(experiment=demo, user=owner)  # eager: the round is played on commit
    model_turn = (
        Turn.objects.filter(experiment=demo, round=demo.current_round + 1, kind="action")
        .order_by("seq")
        .first()
    ) or Turn.objects.filter(experiment=demo, kind="action").order_by("-seq").first()
    narrative = Turn.objects.filter(experiment=demo, kind="narrative").order_by("-seq").first()
    base = f"{live_server.url}/campaigns/{demo.pk}/"

    dm = browser.new_context().new_page()
    sign_in(dm, live_server, "demo")
    dm.goto(base)
    row = dm.locator(f"#turn-{narrative.seq}")
    row.locator("a", has_text="Edit").click()
    row = dm.locator(f"#turn-{narrative.seq}")
    row.locator("textarea[name=content]").fill("The fog parts over the drowned bell.")
    shot(dm, "turn-edit")
    row.locator("button", has_text="Save").click()
    row = dm.locator(f"#turn-{narrative.seq}")
    row.locator(".edited", has_text="edited 1×").wait_for()
    row.locator("summary", has_text="Earlier text (1)").click()
    assert narrative.content.split()[0] in row.locator("details.history").inner_text()
    assert TurnRevision.objects.get(turn=narrative).old_content == narrative.content

    before = {t.pk: t.content for t in Turn.objects.filter(experiment=demo)}
    row = dm.locator(f"#turn-{model_turn.seq}")
    dm.once("dialog", lambda dialog: dialog.accept())
    dm.evaluate("document.getElementById('timeline').setAttribute('data-stale', '')")
    with dm.expect_response(lambda r: r.url.endswith("/regenerate/")):
        row.locator("button", has_text="Regenerate").click()
    ended = (Job.Status.SUCCEEDED, Job.Status.FAILED)
    job = wait_for(lambda: Job.objects.filter(kind="regenerate", status__in=ended).first())
    assert job.status == "succeeded" and job.result["role"] == model_turn.speaker
    # The offline model answers a pack with one of a few stock lines, so a turn of the step
    # may come back word for word (the job says so); every turn that took new text keeps
    # the mark and its earlier text once the timeline refreshes, and only those do.
    replaced, unchanged = job.result["replaced"], job.result["unchanged"]
    assert replaced and model_turn.pk in replaced + unchanged
    for pk in replaced:
        dm.locator(f"#turn-{Turn.objects.get(pk=pk).seq} .edited", has_text="edited 1×").wait_for()
        assert TurnRevision.objects.get(turn_id=pk).old_content == before[pk]
    # Once the timeline has refreshed, the clicked row still says how the job ended.
    dm.locator("#timeline:not([data-stale])").wait_for(state="attached")
    dm.locator(f"#turn-{model_turn.seq} .job-line", has_text="regenerated").wait_for()
    shot(dm, "turn-regenerate")
    for pk in unchanged:
        assert dm.locator(f"#turn-{Turn.objects.get(pk=pk).seq} .edited").count() == 0
        assert not TurnRevision.objects.filter(turn_id=pk).exists()

    thorin = browser.new_context().new_page()
    sign_in(thorin, live_server, "thorin")
    thorin.goto(base)
    assert "The fog parts over the drowned bell." in thorin.content()
    assert thorin.locator("button", has_text="Regenerate").count() == 0
    assert thorin.locator(".turn-fix").count() == 0


def test_an_open_edit_keeps_its_text_when_the_timeline_is_told_to_refresh(
    browser,
    live_server,
    demo,  # noqa: F811
):
    narrative = Turn.objects.filter(experiment=demo, kind="narrative").order_by("-seq").first()
    dm = browser.new_context().new_page()
    sign_in(dm, live_server, "demo")
    dm.goto(f"{live_server.url}/campaigns/{demo.pk}/")
    dm.locator(f"#turn-{narrative.seq}").locator("a", has_text="Edit").click()
    area = dm.locator(f"#turn-{narrative.seq} textarea[name=content]")
    area.fill("The bell tolls twice, and the DM is still typing")
    refreshes = []
    dm.on(
        "request",
        lambda request: (
            refreshes.append(request.url)
            if request.method == "GET" and request.headers.get("hx-target") == "timeline"
            else None
        ),
    )
    # A turn arrives meanwhile, and the page is told as the live stream and finished
    # jobs tell it.
    make_turn(demo, round=demo.current_round, content="A gull lands on the rail.")
    dm.evaluate("htmx.trigger(document.body, 'turns-changed')")
    dm.wait_for_timeout(1000)
    assert refreshes == []
    assert area.input_value() == "The bell tolls twice, and the DM is still typing"
    assert "A gull lands on the rail." not in dm.locator("#timeline").inner_text()

    dm.locator(f"#turn-{narrative.seq}").locator("button", has_text="Save").click()
    # Closed, the timeline makes the refresh it held back: the new turn shows.
    dm.locator("#timeline", has_text="A gull lands on the rail.").wait_for()
    dm.locator(f"#turn-{narrative.seq}", has_text="The bell tolls twice").wait_for()
    assert len(refreshes) == 1
