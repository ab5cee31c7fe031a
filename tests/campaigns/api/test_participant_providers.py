"""A participant's model and its server, checked when set: unknown providers, servers
that do not answer, refused keys and unserved models are 400s naming the field; "Test
connection" says what the server has; the key is never shown back."""

from __future__ import annotations

import pytest

from campaigns.models import Participant

pytestmark = pytest.mark.django_db


def url(experiment, pid=None, test=False) -> str:
    base = f"/api/experiments/{experiment.pk}/participants/"
    if pid is None:
        return base
    return f"{base}{pid}/test-connection/" if test else f"{base}{pid}/"


@pytest.fixture
def ollama(local_server):
    server = local_server("ollama")
    server.served = ["llama3.2", "qwen2.5"]
    server.context_window = 8192
    return server


def test_a_local_model_is_created_after_its_server_said_it_serves_it(api, campaign, owner, ollama):
    body = {"role": "Mira", "model": "ollama:llama3.2", "base_url": ollama.base_url}
    response = api(owner).post(url(campaign), body, format="json")
    assert response.status_code == 201, response.json()
    mira = Participant.objects.get(experiment=campaign, role="Mira")
    assert (mira.model, mira.base_url) == ("ollama:llama3.2", ollama.base_url)
    assert [r.path for r in ollama.requests] == ["/v1/models", "/api/show"]
    assert ollama.calls == []  # asked what it serves and its window; nothing generated


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"model": "smollm2"}, "model"),  # no provider
        ({"model": "ollama3:llama3"}, "model"),  # unknown provider
        ({"model": "ollama:llama3"}, "model"),  # a model the server does not have
        ({"model": "llamacpp:x", "base_url": "http://127.0.0.1:9/v1"}, "base_url"),  # no server
        ({"model": "llamacpp:x", "base_url": "ftp://127.0.0.1/v1"}, "base_url"),
        ({"model": "llamacpp:x", "base_url": "http://user:pw@127.0.0.1/v1"}, "base_url"),
        ({"model": "llamacpp:x", "base_url": "http://10.1.2.3:8080/v1"}, "base_url"),  # host
        ({"model": "openai:x"}, "base_url"),  # no OPENAI_BASE_URL here
        ({"model": "gemini-2.5-flash"}, "api_key"),  # no key here
        ({"model": "ollama:llama3.2", "timeout_s": 0}, "timeout_s"),
        ({"model": "ollama:llama3.2", "timeout_s": 3601}, "timeout_s"),
        ({"model": "ollama:llama3.2", "context_window": 100}, "context_window"),
        ({"model": "ollama:llama3.2", "context_window": "8k"}, "context_window"),
        ({"model": "ollama:llama3.2", "context_window": 4096, "max_output_tokens": 3000},
         "max_output_tokens"),
        ({"model": "ollama:llama3.2", "api_key": "has space"}, "api_key"),
    ],
)  # fmt: skip
def test_bad_provider_settings_are_400s_naming_the_field_and_store_nothing(
    api, campaign, owner, ollama, settings, body, field
):
    settings.OPENAI_BASE_URL = ""
    if body["model"].startswith("ollama:") and "base_url" not in body:
        body = {**body, "base_url": ollama.base_url}
    before = Participant.objects.count()
    created = api(owner).post(url(campaign), {"role": "Mira", **body}, format="json")
    assert created.status_code == 400 and field in created.json(), created.json()
    assert Participant.objects.count() == before
    dm = campaign.participants.get(role="DM")
    patched = api(owner).patch(url(campaign, dm.pk), body, format="json")
    assert patched.status_code == 400 and field in patched.json(), patched.json()
    dm.refresh_from_db()
    assert (dm.model, dm.base_url, dm.timeout_s, dm.context_window) == ("human", "", None, None)


def test_a_refused_key_is_a_400_on_the_key(api, campaign, owner, local_server):
    server = local_server("vllm")
    server.required_key = "sk-right"
    dm = campaign.participants.get(role="DM")
    body = {"model": "vllm:qwen", "base_url": server.base_url, "api_key": "sk-wrong"}
    response = api(owner).patch(url(campaign, dm.pk), body, format="json")
    assert response.status_code == 400 and "api_key" in response.json()
    response = api(owner).patch(
        url(campaign, dm.pk), {**body, "api_key": "sk-right"}, format="json"
    )
    assert response.status_code == 200, response.json()
    dm.refresh_from_db()
    assert dm.api_key == "sk-right"


def test_the_key_is_never_shown_back_and_blank_keeps_it(api, campaign, owner, player, local_server):
    server = local_server("vllm")
    server.required_key = "sk-secret-123"
    dm = campaign.participants.get(role="DM")
    body = {"model": "vllm:qwen", "base_url": server.base_url, "api_key": "sk-secret-123"}
    responses = [api(owner).patch(url(campaign, dm.pk), body, format="json")]
    responses.append(
        api(owner).patch(url(campaign, dm.pk), {"api_key": "", "timeout_s": 60}, format="json")
    )
    responses.append(api(owner).post(url(campaign, dm.pk, test=True), {}, format="json"))
    responses += [api(who).get(url(campaign)) for who in (owner, player)]
    responses.append(api(owner).get(f"/api/experiments/{campaign.pk}/export/"))
    for response in responses:
        assert response.status_code == 200, response.content
        assert b"sk-secret-123" not in response.content
    shown = {p["role"]: p for p in responses[3].json()["results"]}["DM"]
    assert shown["api_key_set"] is True and "api_key" not in shown
    dm.refresh_from_db()
    assert (dm.api_key, dm.timeout_s) == ("sk-secret-123", 60)  # blank kept it
    api(owner).patch(url(campaign, dm.pk), {"api_key": None, "model": "offline"}, format="json")
    dm.refresh_from_db()
    assert dm.api_key == ""


def test_test_connection_reports_the_models_and_the_window_without_saving(
    api, campaign, owner, local_server
):
    server = local_server("llamacpp")
    server.context_window = 8192
    dm = campaign.participants.get(role="DM")
    body = {"model": "llamacpp:smollm2", "base_url": server.base_url}
    response = api(owner).post(url(campaign, dm.pk, test=True), body, format="json")
    assert response.status_code == 200, response.json()
    data = response.json()
    assert data["ok"] is True and data["server"] == server.base_url
    assert data["window"] == {
        "tokens": 8192,
        "source": "llama.cpp /props n_ctx",
        "output_shares": True,
    }
    assert any("smollm2" in w for w in data["warnings"])  # llama.cpp serves what it loaded
    dm.refresh_from_db()
    assert dm.model == "human"  # nothing saved
    server.stop()
    down = api(owner).post(url(campaign, dm.pk, test=True), body, format="json").json()
    assert (down["ok"], down["field"]) == (False, "base_url")


def test_test_connection_edges(api, campaign, owner, player, stranger):
    dm = campaign.participants.get(role="DM")
    assert api(owner).get(url(campaign, dm.pk, test=True)).status_code == 405
    assert api(player).post(url(campaign, dm.pk, test=True), {}, format="json").status_code == 403
    assert api(stranger).post(url(campaign, dm.pk, test=True), {}, format="json").status_code == 404
    assert api(owner).post(url(campaign, 999999, test=True), {}, format="json").status_code == 404
    human = api(owner).post(url(campaign, dm.pk, test=True), {}, format="json")
    assert human.status_code == 400 and "model" in human.json()  # a human has no server
    bad = api(owner).post(url(campaign, dm.pk, test=True), {"colour": "red"}, format="json")
    assert bad.status_code == 400 and "colour" in bad.json()


def test_memory_workers_models_are_checked_when_set(api, campaign, owner, ollama):
    patch = f"/api/experiments/{campaign.pk}/"
    body = {"config": {"memory_model": "ollama:qwen2.5", "memory_base_url": ollama.base_url}}
    assert api(owner).patch(patch, body, format="json").status_code == 200
    campaign.refresh_from_db()
    assert campaign.config["memory_model"] == "ollama:qwen2.5"
    for config, field in [
        ({"memory_model": "ollama:nope", "memory_base_url": ollama.base_url},
         "config.memory_model"),
        ({"summarizer_model": "smollm2"}, "config.summarizer_model"),
        ({"memory_model": "llamacpp:x", "memory_base_url": "http://127.0.0.1:9/v1"},
         "config.memory_base_url"),
        ({"memory_model": "llamacpp:x", "memory_base_url": "http://10.0.0.9/v1"},
         "config.memory_base_url"),
    ]:  # fmt: skip
        response = api(owner).patch(patch, {"config": config}, format="json")
        assert response.status_code == 400 and field in response.json(), response.json()
    campaign.refresh_from_db()
    assert campaign.config["memory_model"] == "ollama:qwen2.5"
