"""`POST /api/import/` and `GET …/export/`: the transcript format, lossless and all-or-nothing."""

from __future__ import annotations

import copy
import json

import pytest

from campaigns import demo
from campaigns.models import Experiment, LoreEntry, Participant, Turn
from campaigns.services import transcripts

pytestmark = pytest.mark.django_db

IMPORT = "/api/import/"


def export_url(experiment_id) -> str:
    return f"/api/experiments/{experiment_id}/export/"


def _counts():
    return (
        Experiment.objects.count(),
        Participant.objects.count(),
        Turn.objects.count(),
        LoreEntry.objects.count(),
    )


def test_import_then_export_through_the_api_is_byte_identical(api, owner):
    text = transcripts.dumps(demo.transcript())
    response = api(owner).post(IMPORT, data=text.encode(), content_type="application/json")
    assert response.status_code == 201, response.json()
    experiment_id = response.json()["id"]
    assert response["Location"] == f"/api/experiments/{experiment_id}/"
    experiment = Experiment.objects.get(pk=experiment_id)
    assert experiment.owner == owner
    assert experiment.turns.count() == len(demo.transcript()["turns"])

    exported = api(owner).get(export_url(experiment_id))
    assert exported.status_code == 200
    assert exported["Content-Type"].startswith("application/json")
    body = exported.content.decode("utf-8")
    assert body == transcripts.dumps(transcripts.export_transcript(experiment=experiment))
    # …and a second round trip gives the same bytes again.
    again = api(owner).post(IMPORT, data=exported.content, content_type="application/json")
    assert again.status_code == 201
    assert api(owner).get(export_url(again.json()["id"])).content == exported.content


def test_export_of_a_campaign_built_through_the_api_imports_identically(
    api, secrets_campaign, owner
):
    first = api(owner).get(export_url(secrets_campaign.experiment.pk)).content
    created = api(owner).post(IMPORT, data=first, content_type="application/json")
    assert created.status_code == 201, created.json()
    assert api(owner).get(export_url(created.json()["id"])).content == first


def test_anyone_signed_in_may_import_and_owns_the_result(api, stranger):
    response = api(stranger).post(IMPORT, demo.transcript(), format="json")
    assert response.status_code == 201
    assert Experiment.objects.get(pk=response.json()["id"]).owner == stranger


def _bad(mutate):
    data = copy.deepcopy(demo.transcript())
    mutate(data)
    return data


@pytest.mark.parametrize(
    ("data", "field"),
    [
        (_bad(lambda d: d["turns"][3].update(visibility=["Nobody"])), "turns[3].visibility"),
        (_bad(lambda d: d["turns"][0].update(speaker="Ghost")), "turns[0].speaker"),
        (_bad(lambda d: d["turns"][2].update(kind="poem")), "turns[2].kind"),
        (_bad(lambda d: d["turns"][1].update(round=-1)), "turns[1].round"),
        (
            _bad(lambda d: d["participants"].append(dict(d["participants"][0]))),
            "participants[4].role",
        ),
        (
            _bad(lambda d: d["experiment"]["config"].update(colour="red")),
            "experiment.config.colour",
        ),
        (_bad(lambda d: d.update(extra=1)), "extra"),
        (_bad(lambda d: d.pop("turns")), "turns"),
        ([1, 2, 3], "transcript"),
    ],
)
def test_a_bad_transcript_is_400_naming_the_element_and_stores_nothing(api, owner, data, field):
    before = _counts()
    response = api(owner).post(IMPORT, data, format="json")
    assert response.status_code == 400
    assert field in response.json(), response.json()
    assert _counts() == before


def test_malformed_json_import_is_400(api, owner):
    response = api(owner).post(IMPORT, data=b'{"experiment": ', content_type="application/json")
    assert response.status_code == 400
    assert not Experiment.objects.exists()


def test_import_edges(api, owner):
    assert api(owner).get(IMPORT).status_code == 405
    assert api(None).post(IMPORT, demo.transcript(), format="json").status_code in (401, 403)
    assert not Experiment.objects.exists()


def test_export_is_for_owner_and_staff_only(api, secrets_campaign, player, stranger, staff_user):
    experiment_id = secrets_campaign.experiment.pk
    assert api(player).get(export_url(experiment_id)).status_code == 403
    assert api(stranger).get(export_url(experiment_id)).status_code == 404
    exported = api(staff_user).get(export_url(experiment_id))
    assert exported.status_code == 200
    assert json.loads(exported.content)["experiment"]["name"] == secrets_campaign.experiment.name


def test_export_edges(api, campaign, owner):
    assert api(owner).get(export_url(2024202)).status_code == 404
    assert api(owner).post(export_url(campaign.pk), {}, format="json").status_code == 405


def _big_transcript(turns: int) -> bytes:
    """The demo transcript padded with public turns to ``turns`` turns."""
    data = demo.transcript()
    speaker = data["turns"][0]["speaker"]
    last_round = max(turn["round"] for turn in data["turns"])
    data["turns"] += [
        {
            "round": last_round,
            "speaker": speaker,
            "kind": "narrative",
            "content": f"Padding turn {i}: " + "the tide keeps its own ledger. " * 6,
            "visibility": None,
            "tags": [],
            "hinge": False,
        }
        for i in range(turns - len(data["turns"]))
    ]
    return transcripts.dumps(data).encode()


def test_a_transcript_larger_than_djangos_upload_limit_imports(api, owner, settings):
    body = _big_transcript(14_000)
    assert len(body) > settings.DATA_UPLOAD_MAX_MEMORY_SIZE  # 2.5 MB: refused before
    response = api(owner).post(IMPORT, data=body, content_type="application/json")
    assert response.status_code == 201, response.content[:300]
    assert Experiment.objects.get(pk=response.json()["id"]).turns.count() == 14_000


def test_a_transcript_over_the_import_limit_is_a_413_naming_it_and_stores_nothing(
    api, owner, settings
):
    settings.BABEL_MAX_IMPORT_BYTES = 50_000
    body = _big_transcript(400)
    assert len(body) > 50_000
    before = _counts()
    response = api(owner).post(IMPORT, data=body, content_type="application/json")
    assert response.status_code == 413
    assert response["Content-Type"].startswith("application/json")
    detail = response.json()["detail"]
    assert "50000 bytes" in detail and "BABEL_MAX_IMPORT_BYTES" in detail
    assert str(len(body)) in detail
    assert _counts() == before


def test_a_chunked_body_is_cut_off_at_the_limit(settings):
    import io

    from campaigns.api.import_parser import ImportTooLarge, read_limited

    assert read_limited(io.BytesIO(b"x" * 10), None, 10) == b"x" * 10
    with pytest.raises(ImportTooLarge, match="over 10 bytes"):
        read_limited(io.BytesIO(b"x" * 11), None, 10)
    with pytest.raises(ImportTooLarge, match="11 bytes"):
        read_limited(io.BytesIO(b""), 11, 10)  # declared length: refused before reading


def test_an_imported_transcript_counts_tokens_like_a_posted_turn(api, owner):
    from context_engine import tokens

    body = _big_transcript(3_000)
    response = api(owner).post(IMPORT, data=body, content_type="application/json")
    assert response.status_code == 201
    for turn in Turn.objects.filter(experiment_id=response.json()["id"]).order_by("?")[:50]:
        assert turn.tokens == tokens.count(turn.content)
