"""`/campaigns/new/`, the Settings tab, archive, delete and duplicate (issue 24): every
form field-validated by the services the API calls, writes the owner's and staff's only,
and a refused write stores nothing."""

import pytest
from django.urls import reverse

from campaigns.models import Experiment, Participant, Turn
from tests.campaigns.api.conftest import client_for
from tests.campaigns.console.conftest import HX, is_fragment, is_login_redirect
from tests.campaigns.console.matrix import check_get

pytestmark = pytest.mark.django_db

# Setup pages are the owner's and staff's: a seated player gets 403, an outsider 404.
WRITE = {"owner": 200, "staff": 200, "player": 403, "stranger": 404, "anonymous": "login"}
REFUSED = [("player", 403), ("stranger", 404), ("anonymous", 302)]


def url(exp, name, *args):
    return reverse(name, args=[exp.pk, *args])


def settings_data(**changes):
    data = {
        "name": "The Salt Road",
        "hook": "A caravan crosses the salt flats.",
        "rules": "Roll under your skill.",
        "strategy": "layered",
        "total_budget": "13000",
        "hot_window_rounds": "4",
        "memory_interval": "4",
        "human_timeout_policy": "skip",
        "human_timeout_s": "",
    }
    data.update(changes)
    return data


def snapshot(exp):
    exp.refresh_from_db()
    return (exp.name, exp.hook, exp.rules, exp.config, exp.status)


# -- /campaigns/new/ -------------------------------------------------------------------


def test_the_new_campaign_page_is_for_any_signed_in_user(as_user, stranger):
    page = as_user(stranger).get(reverse("console:campaign_new"))
    assert page.status_code == 200
    assert 'name="total_budget"' in page.content.decode()
    assert is_login_redirect(as_user(None).get(reverse("console:campaign_new")))
    assert is_fragment(as_user(stranger).get(reverse("console:campaign_new"), **HX))


def test_a_new_campaign_is_a_draft_its_creator_owns_then_its_cast_page(as_user, stranger):
    response = as_user(stranger).post(
        reverse("console:campaign_new"),
        settings_data(total_budget="26000", human_timeout_policy="narrate", human_timeout_s="60"),
    )
    exp = Experiment.objects.get(name="The Salt Road")
    assert response.status_code == 302 and response["Location"] == url(exp, "console:cast")
    assert (exp.owner, exp.status, exp.hook) == (
        stranger,
        "draft",
        "A caravan crosses the salt flats.",
    )
    assert exp.config["human_timeout_policy"] == "narrate"
    assert exp.config["human_timeout_s"] == 60
    assert sum(exp.config["budgets"].values()) == 26000
    assert exp.world_state is not None


@pytest.mark.parametrize(
    "field,value,message",
    [
        ("hot_window_rounds", "0", "hot_window_rounds must be a whole number from 1 to 50."),
        ("memory_interval", "101", "memory_interval must be a whole number from 1 to 100."),
        ("human_timeout_s", "5", "human_timeout_s must be a whole number from 10 to 604800."),
        ("total_budget", "9000000", "A budget is a whole number of tokens from 0 to 1000000."),
        ("total_budget", "-5", "The total budget is a whole number of tokens."),
        ("name", "   ", "This field is required."),
        ("strategy", "vibes", "Select a valid choice."),
    ],
)
def test_a_bad_setting_names_its_field_and_creates_nothing(
    as_user, stranger, field, value, message
):
    response = as_user(stranger).post(
        reverse("console:campaign_new"), settings_data(**{field: value})
    )
    assert response.status_code == 422
    body = response.content.decode()
    assert message in body
    # The message sits in the field's own block.
    assert message in body.split(f'data-field="{field}"', 1)[1].split('data-field="', 1)[0]
    assert not Experiment.objects.exists()


def test_the_settings_errors_are_the_apis_own_messages(stranger):
    """Same service, same words: the API answers the bad hot window with the same text."""
    response = client_for(stranger).post(
        "/api/experiments/", {"name": "x", "config": {"hot_window_rounds": 0}}, format="json"
    )
    assert response.status_code == 400
    assert "hot_window_rounds must be a whole number from 1 to 50." in str(response.json())


# -- the Settings tab --------------------------------------------------------------------


@pytest.mark.parametrize("persona", WRITE)
def test_the_settings_tab_over_the_permission_matrix(as_user, personas, exp, persona):
    check_get(
        as_user(personas[persona]),
        url(exp, "console:settings"),
        WRITE[persona],
        marker='id="settings-form"',
    )


def test_settings_save_through_the_update_service(as_user, owner, exp):
    response = as_user(owner).post(
        url(exp, "console:settings"),
        settings_data(strategy="tiered", hot_window_rounds="6", total_budget="6500"),
        **HX,
    )
    assert response.status_code == 200 and "Saved." in response.content.decode()
    assert is_fragment(response)
    exp.refresh_from_db()
    assert exp.name == "The Salt Road"
    assert (exp.config["strategy"], exp.config["hot_window_rounds"]) == ("tiered", 6)
    budgets = exp.config["budgets"]
    assert sum(budgets.values()) == 6500
    assert budgets["recent"] > budgets["input"]  # the sections keep their proportions


def test_an_unchanged_total_leaves_the_section_budgets_alone(as_user, owner, exp):
    exp.config = {"budgets": {"recent": 9000}}
    exp.save()
    total = 9000 + 13000 - 3500
    as_user(owner).post(url(exp, "console:settings"), settings_data(total_budget=str(total)))
    exp.refresh_from_db()
    assert exp.config["budgets"] == {"recent": 9000}


def test_a_bad_setting_stores_nothing_and_keeps_what_was_typed(as_user, owner, exp):
    before = snapshot(exp)
    response = as_user(owner).post(
        url(exp, "console:settings"), settings_data(hot_window_rounds="99", name="Renamed"), **HX
    )
    assert response.status_code == 422
    assert 'value="Renamed"' in response.content.decode()
    assert snapshot(exp) == before


@pytest.mark.parametrize("persona,status", REFUSED)
def test_only_editors_change_settings(as_user, personas, exp, persona, status):
    before = snapshot(exp)
    response = as_user(personas[persona]).post(url(exp, "console:settings"), settings_data())
    assert response.status_code == status
    assert snapshot(exp) == before


# -- archive, delete, duplicate ------------------------------------------------------------


def test_archive_moves_the_campaign_under_archived_and_back(as_user, owner, exp):
    client = as_user(owner)
    assert client.post(url(exp, "console:archive")).status_code == 302
    exp.refresh_from_db()
    assert exp.status == "archived"
    dashboard = client.get(reverse("console:dashboard")).content.decode()
    assert "Archived (1)" in dashboard
    assert dashboard.split("Archived (1)")[0].count(exp.name) == 0
    client.post(url(exp, "console:archive"))
    exp.refresh_from_db()
    assert exp.status == "draft"


def test_archive_asks_first(as_user, owner, exp):
    page = as_user(owner).get(url(exp, "console:settings")).content.decode()
    assert 'hx-confirm="Archive ' in page


def test_delete_asks_for_the_name_and_a_wrong_name_deletes_nothing(as_user, owner, exp):
    client = as_user(owner)
    page = client.get(url(exp, "console:delete"))
    assert page.status_code == 200 and "cannot be undone" in page.content.decode()
    wrong = client.post(url(exp, "console:delete"), {"confirm": "something else"})
    assert wrong.status_code == 422 and "nothing was deleted" in wrong.content.decode()
    assert Experiment.objects.filter(pk=exp.pk).exists()
    right = client.post(url(exp, "console:delete"), {"confirm": exp.name})
    assert right.status_code == 302 and right["Location"] == reverse("console:dashboard")
    assert not Experiment.objects.filter(pk=exp.pk).exists()
    assert not Turn.objects.filter(experiment_id=exp.pk).exists()


@pytest.mark.parametrize("persona,status", REFUSED)
def test_only_editors_archive_delete_or_duplicate(as_user, personas, exp, persona, status):
    client = as_user(personas[persona])
    before = snapshot(exp)
    assert client.post(url(exp, "console:archive")).status_code == status
    assert client.post(url(exp, "console:delete"), {"confirm": exp.name}).status_code == status
    assert client.post(url(exp, "console:duplicate")).status_code == status
    assert snapshot(exp) == before
    assert Experiment.objects.count() == 1


def test_duplicate_copies_settings_and_cast_but_no_turns_or_seats(as_user, owner, staff_user, exp):
    exp.config = {"strategy": "tiered"}
    exp.save()
    response = as_user(staff_user).post(url(exp, "console:duplicate"))
    copy = Experiment.objects.exclude(pk=exp.pk).get()
    assert response.status_code == 302 and response["Location"] == url(copy, "console:settings")
    assert (copy.name, copy.owner, copy.status) == (f"Copy of {exp.name}", staff_user, "draft")
    assert (copy.hook, copy.rules, copy.config) == (exp.hook, exp.rules, exp.config)
    fields = ("role", "kind", "model", "bio", "identity", "secret", "reveal_round", "order")
    original = list(exp.participants.order_by("order").values_list(*fields))
    assert list(copy.participants.order_by("order").values_list(*fields)) == original
    assert not Participant.objects.filter(experiment=copy, user__isnull=False).exists()
    assert not Turn.objects.filter(experiment=copy).exists()
    assert copy.current_round == 0


def test_setup_tabs_show_only_to_editors(as_user, owner, player, exp):
    settings_link = url(exp, "console:settings")
    assert settings_link in as_user(owner).get(url(exp, "console:campaign")).content.decode()
    assert settings_link not in as_user(player).get(url(exp, "console:campaign")).content.decode()
