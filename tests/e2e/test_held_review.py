"""The output guard's review, as the DM in a real browser (issue 23 ask 6): two answers
held on the demo (the DM narrating a GM note, Thorin blurting Cassia's secret goal); the
DM sees the Held badge, the quoted runs marked in each answer and its source, publishes
one after an edit and discards the other; Thorin's timeline never shows either until the
DM publishes. Screenshots under ``artifacts/console/``."""

from __future__ import annotations

import pytest

from campaigns.models import OutputHold, Turn
from campaigns.services.holds import turn_hold
from campaigns.services.output_guard import output_check
from tests.e2e.test_console import demo, shot, sign_in  # noqa: F401 (demo is a fixture)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def hold(experiment, speaker: str, content: str) -> Turn:
    verdict = output_check(experiment=experiment, speaker=speaker, visibility=None, text=content)
    assert verdict.held, content
    return turn_hold(
        experiment=experiment,
        review=verdict.review,
        quotes=list(verdict.records),
        round=experiment.current_round,
        speaker=speaker,
        kind="narrative" if speaker == "DM" else "action",
        content=content,
        visibility=None,
    )


def test_the_dm_reviews_held_answers_in_the_console(browser, live_server, demo):  # noqa: F811
    note = Turn.objects.filter(experiment=demo, kind="gm_note").order_by("seq").first()
    secret = demo.participants.get(role="Cassia").secret
    narrated = hold(demo, "DM", f"The fog lifts. {note.content} The bell rings twice.")
    blurted = hold(demo, "Thorin", f"Thorin laughs: {secret}")
    base = f"{live_server.url}/campaigns/{demo.pk}/"

    thorin = browser.new_context().new_page()
    sign_in(thorin, live_server, "thorin")
    thorin.goto(base)
    assert "The fog lifts" not in thorin.content()
    assert thorin.locator("a", has_text="Held").count() == 0

    dm = browser.new_context().new_page()
    sign_in(dm, live_server, "demo")
    dm.goto(base)
    assert dm.locator(".tabs a", has_text="Held").locator(".badge").inner_text() == "2"
    dm.locator(f"#turn-{narrated.seq} a.badge", has_text="held for review").click()
    dm.wait_for_url(f"{base}held/*")
    items = dm.locator("li.held")
    assert items.count() == 2
    first = dm.locator(f"#held-{narrated.pk}")
    marked = first.locator(".held-text mark.leak").inner_text()
    assert marked.lower().split()[:4] == note.content.lower().split()[:4]
    # The note, and the DM-only World Bible entry made from it, are both named and marked.
    sources = first.locator(".quote strong").all_inner_texts()
    assert any(label.startswith("GM note by DM") for label in sources)
    assert first.locator(".quote .source mark.leak").count() == len(sources)
    shot(dm, "held-review")

    first.locator("textarea[name=content]").fill("The fog lifts. The bell rings twice.")
    first.locator("button", has_text="Publish").click()
    dm.locator(".notice", has_text=f"#{narrated.seq} published").wait_for()
    dm.once("dialog", lambda dialog: dialog.accept())
    dm.locator(f"#held-{blurted.pk} button", has_text="Discard").click()
    dm.locator(".notice", has_text=f"#{blurted.seq} discarded").wait_for()
    assert dm.locator("li.held").count() == 0
    assert dm.locator("#held-count").is_hidden()  # the tab's count follows the swap
    shot(dm, "held-review-done")

    assert OutputHold.objects.get(seq=narrated.seq).status == "published"
    assert not Turn.objects.filter(pk=blurted.pk).exists()
    thorin.goto(base)
    page = thorin.content()
    assert "The fog lifts. The bell rings twice." in page
    assert note.content not in page and secret not in page
