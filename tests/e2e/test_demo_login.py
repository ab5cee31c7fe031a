"""The login that `seed_demo` prints works in a real browser."""

import pytest
from django.core.management import call_command

from campaigns.management.commands.seed_demo import DEMO_PASSWORD

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def _sign_in(page, live_server, username):
    page.goto(f"{live_server.url}/")
    assert "/accounts/login/" in page.url
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", DEMO_PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")


def test_the_printed_demo_login_opens_the_campaign_list(page, live_server):
    call_command("seed_demo")
    _sign_in(page, live_server, "demo")
    assert page.locator("h1").inner_text() == "Campaigns"
    assert "The Drowned Archive" in page.locator("table.list").inner_text()
    page.goto(f"{live_server.url}/admin/campaigns/turn/")
    assert "Select turn to change" in page.content()


def test_a_wrong_password_is_refused(page, live_server):
    call_command("seed_demo")
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "demo")
    page.fill("input[name=password]", "not-the-password")
    page.click("button[type=submit]")
    assert "/accounts/login/" in page.url
    assert "enter a correct username and password" in page.content()
