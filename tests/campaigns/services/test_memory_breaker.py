"""The memory workers' circuit breaker (issue 26 ask 5): it opens when a model could not
be reached, not on one bad answer, so a small model that writes broken JSON once is asked
again on the next task while a server that is down is skipped for a while."""

from __future__ import annotations

import pytest

from campaigns.services.memory import backends
from campaigns.services.memory.vetting import vet_entries
from context_engine.llm import OfflineClient, Usage
from context_engine.llm.usage import CallRecord
from tests.factories import make_turn

pytestmark = pytest.mark.django_db


class _Client:
    model = "openai:small"
    offline = False


def _call(status: str) -> CallRecord:
    return CallRecord(model="openai:small", messages=(), usage=Usage(), status=status)


@pytest.fixture
def client():
    made = _Client()
    yield made
    backends.mark_up(made)


def test_a_bad_answer_keeps_the_breaker_closed(client):
    backends.judge_calls(client, [_call("ok")])  # answered, even if the JSON was broken
    assert not backends.model_down(client)


def test_a_refusal_then_an_answer_in_json_mode_keeps_it_closed(client):
    backends.judge_calls(client, [_call("failed"), _call("ok")])
    assert not backends.model_down(client)


@pytest.mark.parametrize("status", ["timed_out", "failed"])
def test_a_model_that_could_not_be_reached_opens_it(client, status):
    backends.judge_calls(client, [_call(status), _call(status)])
    assert backends.model_down(client)
    backends.judge_calls(client, [_call("ok")])
    assert not backends.model_down(client), "any answer closes it again"


def test_no_call_and_offline_change_nothing(client):
    backends.judge_calls(client, [])
    assert not backends.model_down(client)
    offline = OfflineClient()
    backends.judge_calls(offline, [_call("failed")])
    assert not backends.model_down(offline)


def test_vetting_that_gets_broken_json_asks_again_next_time(campaign, settings, openai_standin):
    """Every answer is broken JSON: each /checkpoint's vetting still reaches the model."""
    settings.OPENAI_BASE_URL = openai_standin.base_url
    settings.BABEL_LLM_RETRY_BASE_DELAY = 0.0
    campaign.config = {**(campaign.config or {}), "definer_model": "openai:small"}
    campaign.save(update_fields=["config"])
    openai_standin.set_default("malformed_json")
    for round_ in (1, 2):
        make_turn(campaign, round=round_, content="Captain Idris Vane boards the Saltwind.")
        make_turn(campaign, round=round_, content="Idris Vane greets the crew of the Saltwind.")
    from campaigns.services.memory.hydrate import hydrate_experiment

    hydrate_experiment(experiment=campaign)
    before = len(openai_standin.calls)
    vet_entries(experiment=campaign)
    first = len(openai_standin.calls)
    assert first > before, "vetting asked the model"
    client = backends.definer_client(campaign)
    assert not backends.model_down(client), "broken JSON is an answer, not an outage"
    openai_standin.set_default("500")
    vet_entries(experiment=campaign)  # the unanswered entries are asked again
    assert len(openai_standin.calls) > first
    assert backends.model_down(client), "a server that answers nothing is skipped"
    backends.mark_up(client)
