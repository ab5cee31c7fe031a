"""Take it home in a real browser (issue 24, ask 5): the DM exports the demo campaign,
imports a broken copy (and reads the field-named error), imports the good one (following
its progress to the new campaign), and downloads a player's session log — which holds
none of the other players' whispers. Screenshots of the log page, the printable page (on
screen and as print media) and the import page at 1,280 and 390 px go under
``artifacts/console/``."""

from __future__ import annotations

import json

import pytest

from campaigns.models import Experiment, TranscriptUpload, Turn
from campaigns.services import transcripts
from campaigns.services.transcripts.uploads import transcript_upload_run
from tests.e2e.test_console import demo, shot, sign_in  # noqa: F401 (fixture)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def _download(page, link) -> bytes:
    with page.expect_download() as info:
        link.click()
    with open(info.value.path(), "rb") as file:
        return file.read()


def test_the_dm_exports_imports_and_takes_home_a_players_log(
    page,
    live_server,
    demo,  # noqa: F811
    tmp_path,
):
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    sign_in(page, live_server, "demo")
    log_page = f"{live_server.url}/campaigns/{demo.pk}/log/"

    # Export: the same bytes as the API's export.
    page.goto(f"{live_server.url}/campaigns/{demo.pk}/")
    page.get_by_role("link", name="Session log").click()
    page.wait_for_url(log_page)
    shot(page, "session-log")
    exported = _download(page, page.locator("#export-json"))
    assert exported == transcripts.dumps(transcripts.export_transcript(experiment=demo)).encode()

    # Import a broken copy: the API's field-named error, and no new campaign.
    broken = json.loads(exported)
    broken["turns"][3]["speaker"] = "Nobody"
    bad_file = tmp_path / "broken.json"
    bad_file.write_text(json.dumps(broken))
    page.goto(f"{live_server.url}/")
    page.get_by_role("link", name="Import a transcript").first.click()
    page.wait_for_url(f"{live_server.url}/campaigns/import/")
    shot(page, "import")
    page.set_input_files("#id_transcript", str(bad_file))
    page.get_by_role("button", name="Upload and import").click()
    page.locator(".import-errors code", has_text="turns[3].speaker").wait_for()
    assert "Nothing was imported" in page.locator("#import-progress").inner_text()
    assert Experiment.objects.count() == 1
    shot(page, "import-error")

    # Import the good file: the new campaign, owned by the DM.
    good_file = tmp_path / "good.json"
    good_file.write_bytes(exported)
    page.set_input_files("#id_transcript", str(good_file))
    page.get_by_role("button", name="Upload and import").click()
    page.locator("#open-imported").wait_for()
    shot(page, "import-done")
    page.locator("#open-imported").click()
    page.wait_for_url(lambda url: f"/campaigns/{demo.pk}/" not in url and "/campaigns/" in url)
    copy = Experiment.objects.exclude(pk=demo.pk).get()
    assert copy.turns.count() == demo.turns.filter(held_at__isnull=True).count()
    assert page.locator("h1").first.inner_text() == demo.name

    # A larger import waiting for a worker: the page polls its progress, then the campaign.
    upload = TranscriptUpload.objects.create(
        user=demo.owner, filename="big.json", size=len(exported), payload=exported
    )
    page.goto(f"{live_server.url}/imports/{upload.pk}/")
    page.locator("#import-bar").wait_for()
    assert "Waiting to start" in page.locator("#import-progress").inner_text()
    shot(page, "import-progress")
    assert transcript_upload_run(upload_id=upload.pk).status == "succeeded"
    page.locator("#open-imported").wait_for(timeout=10_000)  # the next poll brings it
    assert Experiment.objects.count() == 3

    # Thorin's session log: his whispers, no one else's. Downloaded straight after
    # choosing him (no "Show log" first): the button sends the role selected.
    page.goto(log_page)
    page.select_option("#log-as", "Thorin")
    markdown = _download(page, page.locator("#log-md")).decode()
    assert "*For what Thorin may read.*" in markdown
    page.get_by_role("button", name="Show log").click()
    page.wait_for_url(f"{log_page}?as=Thorin")
    shot(page, "session-log-thorin")
    whispers = Turn.objects.filter(experiment=demo, kind="whisper", held_at__isnull=True)
    his = [t.content for t in whispers if t.visibility and "Thorin" in t.visibility]
    others = [t.content for t in whispers if not t.visibility or "Thorin" not in t.visibility]
    assert his and others
    for text in his:
        assert text.strip().splitlines()[0] in markdown
    for text in others:
        assert text not in markdown
        assert text.strip().splitlines()[0] not in markdown
    assert "# " + demo.name in markdown

    # The printable page (a new tab): on screen and as print media, no console chrome.
    with page.context.expect_page() as opened:
        page.locator("#log-html").click()
    printable = opened.value.url
    opened.value.close()
    assert printable.endswith("?as=Thorin&format=html")
    page.goto(printable)
    assert page.locator("nav.tabs").count() == 0
    for text in others:
        assert text.strip().splitlines()[0] not in page.content()
    assert page.locator(".print-hint").is_visible()
    shot(page, "session-log-print")
    page.emulate_media(media="print")
    assert not page.locator(".print-hint").is_visible()  # the hint is for the screen only
    shot(page, "session-log-print-media")
    page.emulate_media(media="screen")
    assert not errors, errors
