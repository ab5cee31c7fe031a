"""A transcript uploaded in the console is imported by a real worker (issue 24, ask 5):
the upload answers at once with its progress, the console's poll follows it to the new
campaign, and a bad file's field-named errors come back the same way, storing nothing."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from campaigns import demo
from campaigns.models import Experiment, TranscriptUpload, Turn
from tests.integration.test_memory_worker import default_queue
from tests.integration.worker import celery_worker, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]
HX = {"HTTP_HX_REQUEST": "true"}


def _poll_until_done(client, upload_id) -> tuple[set[str], object]:
    """Poll as the page does; the statuses seen on the way, and the last answer."""
    url = reverse("console:import_status", args=[upload_id])
    seen: set[str] = set()
    last = {}

    def done() -> bool:
        response = client.get(url, **HX)
        seen.add(TranscriptUpload.objects.get(pk=upload_id).status)
        last["response"] = response
        return response.status_code == 286

    wait_for(done, timeout=60)
    return seen, last["response"]


def test_a_worker_imports_an_upload_while_the_page_polls(real_services, owner):
    client = Client()
    client.force_login(owner)
    data = json.dumps(demo.transcript()).encode()
    with celery_worker(real_services) as queue, default_queue(queue):
        response = client.post(
            reverse("console:import"), {"transcript": SimpleUploadedFile("demo.json", data)}, **HX
        )
        assert response.status_code == 200
        upload = TranscriptUpload.objects.get()
        body = response.content.decode()
        assert 'id="import-progress"' in body
        # Still under way (the page polls), or the worker was already done.
        assert 'hx-trigger="every 1s"' in body or "status-succeeded" in body
        seen, last = _poll_until_done(client, upload.pk)
    upload.refresh_from_db()
    assert upload.status == "succeeded" and upload.experiment.owner == owner
    assert reverse("console:campaign", args=[upload.experiment_id]) in last.content.decode()
    assert upload.experiment.turns.count() == len(demo.transcript()["turns"])
    assert seen <= {"pending", "running", "succeeded"}


def test_a_worker_reports_a_bad_files_errors_and_stores_nothing(real_services, owner):
    client = Client()
    client.force_login(owner)
    transcript = demo.transcript()
    transcript["turns"][3]["speaker"] = "Nobody"
    data = json.dumps(transcript).encode()
    with celery_worker(real_services) as queue, default_queue(queue):
        client.post(
            reverse("console:import"), {"transcript": SimpleUploadedFile("bad.json", data)}, **HX
        )
        upload = TranscriptUpload.objects.get()
        _, last = _poll_until_done(client, upload.pk)
    assert "<code>turns[3].speaker</code>" in last.content.decode()
    assert Experiment.objects.count() == 0 and Turn.objects.count() == 0
