"""Management commands: import/export round trip through files, idempotent demo seed."""

import json

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from campaigns import demo
from campaigns.models import Experiment, Turn

pytestmark = pytest.mark.django_db


def test_seed_demo_is_idempotent_and_creates_logins(capsys, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        call_command("seed_demo")
    first = capsys.readouterr().out
    counts = (Experiment.objects.count(), Turn.objects.count(), get_user_model().objects.count())
    with django_capture_on_commit_callbacks(execute=True):
        call_command("seed_demo")
    assert (
        Experiment.objects.count(),
        Turn.objects.count(),
        get_user_model().objects.count(),
    ) == counts
    assert "lowmere-demo" in first
    experiment = Experiment.objects.get(name=demo.DEMO_NAME)
    assert experiment.owner.username == "demo"
    assert experiment.participants.get(role="Cassia").user.username == "cassia"
    assert experiment.turns.values("round").distinct().count() >= 13
    assert experiment.lore.filter(term="lantern-moss").exists()
    assert experiment.summaries.filter(kind="digest").count() >= 4  # one per audience
    assert experiment.context_events.count() == 1  # the second run changed nothing


def test_export_then_import_files_round_trip(tmp_path):
    call_command("seed_demo", "--no-logins")
    experiment = Experiment.objects.get()
    first = tmp_path / "a.json"
    second = tmp_path / "b.json"
    call_command("export_transcript", experiment.pk, "-o", str(first))
    call_command("import_transcript", str(first))
    copy = Experiment.objects.exclude(pk=experiment.pk).get()
    call_command("export_transcript", copy.pk, "-o", str(second))
    assert first.read_bytes() == second.read_bytes()
    assert json.loads(first.read_text())["turns"][0]["round"] == 0


def test_import_of_a_bad_file_reports_the_field_and_stores_nothing(tmp_path):
    data = demo.transcript()
    data["turns"][4]["visibility"] = ["Nobody"]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(CommandError, match=r"turns\[4\]\.visibility"):
        call_command("import_transcript", str(path))
    assert Experiment.objects.count() == 0


def test_export_of_a_missing_experiment_is_a_clear_error():
    with pytest.raises(CommandError, match="No experiment with id 424242"):
        call_command("export_transcript", 424242)
