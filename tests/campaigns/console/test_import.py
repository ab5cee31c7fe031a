"""`/campaigns/import/` and `/imports/<id>/` — upload a transcript, follow its import, see
the new campaign or the API's own field-named errors; a bad file stores no campaign."""

from __future__ import annotations

import json
import uuid

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from campaigns.models import Experiment, LoreEntry, Participant, TranscriptUpload, Turn
from campaigns.services import transcripts
from campaigns.tasks import transcript_upload_run
from tests.campaigns.api.conftest import client_for
from tests.campaigns.console.conftest import HX, is_login_redirect

pytestmark = pytest.mark.django_db

URL = "/campaigns/import/"


def _file(data: bytes, name: str = "campaign.json") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type="application/json")


def _exported(exp) -> dict:
    return transcripts.export_transcript(experiment=exp)


def _bytes(transcript: dict) -> bytes:
    return transcripts.dumps(transcript).encode()


def _counts():
    return (
        Experiment.objects.count(),
        Participant.objects.count(),
        Turn.objects.count(),
        LoreEntry.objects.count(),
    )


def test_the_url_names_resolve():
    assert reverse("console:import") == URL
    some = uuid.uuid4()
    assert reverse("console:import_status", args=[some]) == f"/imports/{some}/"


def test_anonymous_is_sent_to_sign_in_and_nothing_is_stored(as_user, exp):
    client = as_user(None)
    assert is_login_redirect(client.get(URL))
    before = _counts()
    response = client.post(URL, {"transcript": _file(_bytes(_exported(exp)))})
    assert is_login_redirect(response)
    assert _counts() == before
    assert not TranscriptUpload.objects.exists()


def test_any_signed_in_user_gets_the_form(as_user, stranger):
    body = as_user(stranger).get(URL).content.decode()
    assert 'enctype="multipart/form-data"' in body
    assert 'name="transcript"' in body
    assert 'id="upload-bar"' in body  # the upload's own progress


def test_a_good_file_becomes_a_new_campaign_of_the_uploader(
    as_user, stranger, exp, django_capture_on_commit_callbacks
):
    data = _bytes(_exported(exp))
    with django_capture_on_commit_callbacks(execute=True):
        response = as_user(stranger).post(URL, {"transcript": _file(data)}, **HX)
    assert response.status_code == 200
    upload = TranscriptUpload.objects.get()
    assert upload.status == TranscriptUpload.Status.SUCCEEDED
    assert upload.progress == 100 and bytes(upload.payload) == b""
    new = upload.experiment
    assert new is not None and new.owner == stranger and new.pk != exp.pk
    assert new.turns.count() == exp.turns.count()
    # Lossless: the new campaign exports what was uploaded, the file name aside.
    assert _bytes(_exported(new)) == data
    assert response.status_code == 200
    poll = as_user(stranger).get(reverse("console:import_status", args=[upload.pk]), **HX)
    assert poll.status_code == 286  # ended: htmx stops polling
    assert reverse("console:campaign", args=[new.pk]) in poll.content.decode()


def test_a_bad_file_shows_the_apis_field_named_error_and_stores_no_campaign(
    as_user, owner, exp, django_capture_on_commit_callbacks
):
    transcript = _exported(exp)
    transcript["turns"][3]["speaker"] = "Nobody"
    data = _bytes(transcript)
    api = client_for(owner).post("/api/import/", data, content_type="application/json")
    assert api.status_code == 400
    assert "turns[3].speaker" in api.json()
    before = _counts()
    with django_capture_on_commit_callbacks(execute=True):
        response = as_user(owner).post(URL, {"transcript": _file(data)}, **HX)
    assert response.status_code == 200
    upload = TranscriptUpload.objects.get()
    assert upload.status == TranscriptUpload.Status.FAILED
    assert upload.errors == api.json()  # the same fields, the same messages
    assert bytes(upload.payload) == b""
    assert _counts() == before
    body = as_user(owner).get(reverse("console:import_status", args=[upload.pk]), **HX)
    body = body.content.decode()
    assert "<code>turns[3].speaker</code>" in body
    assert api.json()["turns[3].speaker"][0].replace("'", "&#x27;") in body


@pytest.mark.parametrize(
    ("data", "field", "words"),
    [
        (b"{not json", "transcript", "Not valid JSON"),
        (b'{"turns": [NaN]}', "transcript", "Not valid JSON"),
        (b"\xff\xfe", "transcript", "Not valid JSON"),
        (b'{"experiment": {"name": "a\\u0000b"}}', "experiment.name", "NUL"),
        (b"[" * 40 + b"]" * 40, "transcript", "nest at most"),
        (b"[]", "transcript", "A transcript is a JSON object."),
    ],
)
def test_an_unreadable_file_names_where_and_stores_no_campaign(
    as_user, owner, django_capture_on_commit_callbacks, data, field, words
):
    before = _counts()
    with django_capture_on_commit_callbacks(execute=True):
        response = as_user(owner).post(URL, {"transcript": _file(data)}, **HX)
    upload = TranscriptUpload.objects.get()
    assert upload.status == TranscriptUpload.Status.FAILED
    assert list(upload.errors) == [field]
    assert words in upload.errors[field][0]
    assert response.status_code == 200
    poll = as_user(owner).get(reverse("console:import_status", args=[upload.pk]), **HX)
    assert f"<code>{field}</code>" in poll.content.decode()
    assert _counts() == before


def test_a_file_over_the_limit_is_refused_on_the_form_and_nothing_is_stored(
    as_user, owner, settings
):
    settings.BABEL_MAX_IMPORT_BYTES = 2048
    response = as_user(owner).post(URL, {"transcript": _file(b" " * 2049 + b"{}")}, **HX)
    assert response.status_code == 422
    body = response.content.decode()
    assert "The file is 2051 bytes; the limit is 2048 bytes" in body
    assert "BABEL_MAX_IMPORT_BYTES" in body
    assert not TranscriptUpload.objects.exists()


def test_a_body_far_over_the_limit_is_a_413_before_it_is_read(as_user, owner, settings):
    settings.BABEL_MAX_IMPORT_BYTES = 2048
    response = as_user(owner).post(
        URL, {"transcript": _file(b"x" * 200_000)}, CONTENT_LENGTH="200000"
    )
    assert response.status_code == 413
    assert "BABEL_MAX_IMPORT_BYTES" in response.content.decode()
    assert not TranscriptUpload.objects.exists()


def test_no_file_or_an_empty_one_is_a_form_error(as_user, owner):
    client = as_user(owner)
    response = client.post(URL, {}, **HX)
    assert response.status_code == 422
    assert "This field is required." in response.content.decode()
    response = client.post(URL, {"transcript": _file(b"  \n")}, **HX)
    assert response.status_code == 422
    assert not TranscriptUpload.objects.exists()


def test_progress_polls_while_waiting_then_stops_at_the_new_campaign(as_user, owner, exp):
    client = as_user(owner)
    response = client.post(URL, {"transcript": _file(_bytes(_exported(exp)))}, **HX)
    upload = TranscriptUpload.objects.get()  # no callbacks run: the task has not started
    assert upload.status == TranscriptUpload.Status.PENDING
    status_url = reverse("console:import_status", args=[upload.pk])
    assert f'hx-get="{status_url}"' in response.content.decode()
    poll = client.get(status_url, **HX)
    assert poll.status_code == 200 and 'hx-trigger="every 1s"' in poll.content.decode()
    assert "<html" not in poll.content.decode()
    assert transcript_upload_run(str(upload.pk)) == "succeeded"
    assert transcript_upload_run(str(upload.pk)) == "succeeded"  # redelivered: once only
    assert Experiment.objects.count() == 2
    poll = client.get(status_url, **HX)
    assert poll.status_code == 286  # htmx: stop polling
    upload.refresh_from_db()
    assert reverse("console:campaign", args=[upload.experiment_id]) in poll.content.decode()
    page = client.get(status_url)  # without htmx: the whole page
    assert page.status_code == 200 and "<html" in page.content.decode()


def test_an_upload_is_its_uploaders_alone(as_user, owner, stranger, exp):
    as_user(owner).post(URL, {"transcript": _file(_bytes(_exported(exp)))}, **HX)
    upload = TranscriptUpload.objects.get()
    status_url = reverse("console:import_status", args=[upload.pk])
    assert as_user(stranger).get(status_url).status_code == 404
    assert as_user(stranger).get(status_url, **HX).status_code == 404
    assert is_login_redirect(as_user(None).get(status_url))
    assert as_user(owner).get("/imports/not-a-uuid/").status_code == 404
    assert as_user(owner).get(f"/imports/{uuid.uuid4()}/").status_code == 404


def test_without_htmx_the_upload_redirects_to_its_progress(as_user, owner, exp):
    response = as_user(owner).post(URL, {"transcript": _file(_bytes(_exported(exp)))})
    upload = TranscriptUpload.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("console:import_status", args=[upload.pk])


def test_the_task_ignores_junk_and_missing_ids():
    assert transcript_upload_run("junk") is None
    assert transcript_upload_run(str(uuid.uuid4())) is None


def test_the_dashboard_links_to_import(as_user, owner):
    assert f'href="{URL}"' in as_user(owner).get("/").content.decode()


def test_json_of_the_file_round_trips_through_the_importer(exp):
    data = json.loads(_bytes(_exported(exp)))
    assert data["format"] == transcripts.FORMAT
