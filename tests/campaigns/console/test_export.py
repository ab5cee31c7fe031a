"""`/campaigns/<id>/export/` — the console's Export button: the API export's very bytes."""

from __future__ import annotations

import pytest
from django.urls import reverse

from campaigns.models import Experiment, Turn
from tests.campaigns.api.conftest import client_for
from tests.campaigns.console.conftest import FORBIDDEN, is_login_redirect

pytestmark = pytest.mark.django_db


def test_the_export_button_downloads_the_api_exports_bytes(as_user, owner, exp):
    console = as_user(owner).get(reverse("console:export", args=[exp.pk]))
    api = client_for(owner).get(f"/api/experiments/{exp.pk}/export/")
    assert console.status_code == api.status_code == 200
    assert console.content == api.content
    assert console["Content-Type"] == api["Content-Type"] == "application/json"
    assert console["Content-Disposition"] == api["Content-Disposition"]
    assert console["Content-Disposition"] == f'attachment; filename="experiment-{exp.pk}.json"'
    assert FORBIDDEN["gm_note"].encode() in console.content  # the whole campaign


@pytest.mark.parametrize(
    ("who", "expected"),
    [("owner", 200), ("staff", 200), ("player", 403), ("stranger", 404), ("anonymous", "login")],
)
def test_only_those_the_api_lets_export_get_the_file(as_user, personas, exp, who, expected):
    response = as_user(personas[who]).get(reverse("console:export", args=[exp.pk]))
    if expected == "login":
        assert is_login_redirect(response)
        return
    assert response.status_code == expected
    api = client_for(personas[who]).get(f"/api/experiments/{exp.pk}/export/")
    assert api.status_code == expected  # the same rule as the API's
    if expected != 200:
        assert FORBIDDEN["gm_note"].encode() not in response.content


def test_export_is_get_only_and_stores_nothing(as_user, owner, exp):
    before = (Experiment.objects.count(), Turn.objects.count())
    response = as_user(owner).post(reverse("console:export", args=[exp.pk]))
    assert response.status_code == 405
    assert (Experiment.objects.count(), Turn.objects.count()) == before


def test_a_junk_campaign_id_is_a_404(as_user, owner):
    for pk in ("abc", "0", str(2**70)):
        assert as_user(owner).get(f"/campaigns/{pk}/export/").status_code == 404


def test_the_log_page_shows_the_export_button_to_the_owner_only(as_user, owner, player, exp):
    url = reverse("console:log", args=[exp.pk])
    export = reverse("console:export", args=[exp.pk])
    assert f'id="export-json" href="{export}"' in as_user(owner).get(url).content.decode()
    assert export not in as_user(player).get(url).content.decode()
