import pytest
from django.urls import reverse

from campaigns.models import Experiment
from tests.campaigns.console.conftest import HX, is_fragment, is_login_redirect
from tests.factories import make_experiment

pytestmark = pytest.mark.django_db


def test_anonymous_visitors_go_to_the_login_page(as_user, exp):
    assert is_login_redirect(as_user(None).get("/"))
    assert is_login_redirect(as_user(None).get("/", **HX))


def test_the_owner_sees_each_agents_meter_and_the_campaign_clock(as_user, owner, exp):
    Experiment.objects.filter(pk=exp.pk).update(current_round=7)
    body = as_user(owner).get("/").content.decode()
    assert exp.name in body
    assert ">7</td>" in body
    for role in ("DM", "Thorin", "Cassia"):
        assert reverse("console:context", args=[exp.pk, role]) in body
    assert body.count("<meter") == 3
    assert "proposed lore" in body


def test_the_htmx_refresh_answers_only_the_campaign_list(as_user, owner, exp):
    response = as_user(owner).get("/", **HX)
    assert response.status_code == 200
    assert is_fragment(response)
    assert 'id="campaigns"' in response.content.decode()


def test_a_player_sees_only_their_own_meter_and_no_lore_count(as_user, player, exp):
    body = as_user(player).get("/").content.decode()
    assert exp.name in body
    assert body.count("<meter") == 1
    assert reverse("console:context", args=[exp.pk, "Thorin"]) in body
    assert reverse("console:context", args=[exp.pk, "Cassia"]) not in body
    assert "proposed lore" not in body


def test_a_stranger_sees_no_campaign_of_others(as_user, stranger, exp):
    make_experiment(owner=stranger, name="Mine")
    body = as_user(stranger).get("/").content.decode()
    assert "Mine" in body
    assert exp.name not in body


def test_staff_see_every_campaign(as_user, staff_user, exp):
    assert exp.name in as_user(staff_user).get("/").content.decode()


def test_a_meter_follows_the_log_even_when_cached(as_user, owner, exp):
    from django.core.cache import cache

    from tests.factories import make_turn

    cache.clear()
    client = as_user(owner)

    def thorin_meter():
        body = client.get("/", **HX).content.decode()
        return body.split(reverse("console:context", args=[exp.pk, "Thorin"]))[1].split("</li>")[0]

    before = thorin_meter()
    assert thorin_meter() == before  # served from the cache
    make_turn(exp, content="A long public speech about the tide " * 20)
    assert thorin_meter() != before


def test_an_expired_session_sends_htmx_to_the_login_page_for_the_shown_page(as_user, exp):
    job_url = reverse("console:campaign", args=[exp.pk])
    response = as_user(None).get(
        reverse("console:dashboard"), HTTP_HX_CURRENT_URL=f"http://testserver{job_url}", **HX
    )
    assert response.status_code == 200
    assert response["HX-Redirect"] == f"/accounts/login/?next=%2Fcampaigns%2F{exp.pk}%2F"
    assert response.content == b""
