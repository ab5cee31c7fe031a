"""Locust scenario for `manage.py loadtest`: players and a DM on one campaign.

Configured by `manage.py loadtest` through the environment (no Django here: locust
imports this file in its own process):

- ``BABEL_LT_EXPERIMENT``: the campaign id;
- ``BABEL_LT_ACCOUNTS``: JSON ``[{"username", "password", "token", "role", "owner"}]``;
- ``BABEL_LT_PAGES``: JSON list of page paths to read (``{id}`` is the campaign id).

Each simulated user signs in as one account. Readers fetch the pages (session login),
the turn list and their own context pack through the API; the owner also posts turns.
Requests are named by endpoint, not by URL, so the report has one row per endpoint.
"""

from __future__ import annotations

import itertools
import json
import os
import re

from locust import HttpUser, between, task

EXPERIMENT = os.environ.get("BABEL_LT_EXPERIMENT", "1")
ACCOUNTS = json.loads(os.environ.get("BABEL_LT_ACCOUNTS", "[]"))
PAGES = json.loads(os.environ.get("BABEL_LT_PAGES", '["/"]'))
_next_account = itertools.cycle(range(max(len(ACCOUNTS), 1)))
_CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


class CampaignUser(HttpUser):
    wait_time = between(0.1, 0.5)

    def on_start(self):
        self.account = ACCOUNTS[next(_next_account)]
        self.api_headers = {"Authorization": f"Token {self.account['token']}"}
        self.turn = 0
        login = self.client.get("/accounts/login/", name="page: login")
        found = _CSRF.search(login.text)
        self.client.post(
            "/accounts/login/",
            data={
                "username": self.account["username"],
                "password": self.account["password"],
                "csrfmiddlewaretoken": found.group(1) if found else "",
            },
            name="page: login (post)",
        )

    @task(3)
    def read_pages(self):
        for path in PAGES:
            self.client.get(path.format(id=EXPERIMENT), name=f"page: {path}")

    @task(4)
    def read_turns(self):
        self.client.get(
            f"/api/experiments/{EXPERIMENT}/turns/",
            headers=self.api_headers,
            name="api: GET turns",
        )

    @task(4)
    def read_context(self):
        self.client.get(
            f"/api/experiments/{EXPERIMENT}/context/{self.account['role']}/",
            params={"input": "What do we know about the tide-script?"},
            headers=self.api_headers,
            name="api: GET context pack",
        )

    @task(2)
    def post_turn(self):
        if not self.account.get("owner"):
            return
        self.turn += 1
        self.client.post(
            f"/api/experiments/{EXPERIMENT}/turns/",
            json={
                "round": self.account.get("round", 1),
                "speaker": "DM",
                "kind": "narrative",
                "content": f"Load test narration {self.turn}: the tide-script shifts again.",
            },
            headers=self.api_headers,
            name="api: POST turn",
        )
