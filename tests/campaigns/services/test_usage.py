"""Usage recording and prefix caching in the relay: offline, Gemini (explicit context cache
through the real google-genai SDK) and OpenAI-compatible (automatic prefix cache through
the real openai SDK), against the stand-ins on 127.0.0.1."""

from __future__ import annotations

import pytest
from django.db import DatabaseError

from campaigns.models import ModelCall
from campaigns.reads.adapters import llm_settings
from campaigns.reads.usage import usage_summary
from campaigns.services import usage as usage_service
from campaigns.services.experiments import experiment_update
from campaigns.services.relay import round_start, steps
from campaigns.services.usage import model_call_complete, model_call_record
from context_engine.llm import Usage, client_for
from context_engine.tokens import count
from tests.campaigns.services.memory_support import use_gemini
from tests.standins.answers import REPAIR_MARK

pytestmark = pytest.mark.django_db

GEMINI = "gemini-2.5-flash"
SYSTEM = "You are the DM of the drowned city. " * 30
MESSAGES = [
    {"role": "system", "content": SYSTEM},
    {"role": "user", "content": "Recent: the tide drops."},
    {"role": "user", "content": "Narrate round 1."},
]


def play(experiment, user, capture):
    with capture(execute=True):
        job = round_start(experiment=experiment, user=user)
    job.refresh_from_db()
    return job


@pytest.fixture
def offline_memory(campaign):
    experiment_update(
        experiment=campaign, config={"summarizer_model": "offline", "definer_model": "offline"}
    )
    return campaign


@pytest.fixture
def on_gemini(offline_memory, settings, gemini_standin, monkeypatch):
    use_gemini(settings, gemini_standin)
    offline_memory.participants.update(model=GEMINI)
    monkeypatch.setattr(steps, "_sleep", lambda seconds: None)
    return offline_memory


@pytest.fixture
def caching(settings):
    settings.BABEL_GEMINI_CONTEXT_CACHE = True
    settings.BABEL_GEMINI_CACHE_MIN_TOKENS = 0
    settings.BABEL_GEMINI_CACHE_TTL = 600
    return settings


def is_repair(request) -> bool:
    """The relay's repair request for an unlabelled answer (the stand-in's plain "ok"
    answer has no labels): the same settings, asked once more."""
    return REPAIR_MARK in request.prompt


def generate_requests(standin):
    """The model calls (plain, or streamed as the relay makes them), not cache requests."""
    return [r for r in standin.requests if ":generateContent" in r.path or r.stream]


# -- offline -----------------------------------------------------------------------------


def test_an_offline_round_records_each_acting_step_counted_with_the_project_counter(
    offline_memory, owner, django_capture_on_commit_callbacks
):
    offline_memory.participants.update(model="offline")
    job = play(offline_memory, owner, django_capture_on_commit_callbacks)

    calls = list(ModelCall.objects.filter(experiment=offline_memory).order_by("id"))
    assert [(c.role, c.step) for c in calls] == [
        ("DM", "narrate"),
        ("Thorin", "act"),
        ("Cassia", "act"),
        ("DM", "answer"),  # the offline players whisper, so the DM answers
    ]
    assert all(c.tokens_in > 0 and c.tokens_cached == 0 and c.job_id == job.pk for c in calls)
    # Only the DM's answer has a previous call of its agent (its narration) to compare with.
    assert [c.prefix_stable_share is None for c in calls] == [True, True, True, False]
    usage = job.result["usage"]
    assert [a["role"] for a in usage["agents"]] == ["DM", "Thorin", "Cassia"]
    assert usage["total"]["tokens_in"] == sum(c.tokens_in for c in calls)
    assert usage["total"]["saving_tokens"] == 0


def test_the_second_round_measures_how_much_of_each_prompt_stayed_byte_identical(
    offline_memory, owner, django_capture_on_commit_callbacks
):
    offline_memory.participants.update(model="offline")
    play(offline_memory, owner, django_capture_on_commit_callbacks)
    job = play(offline_memory, owner, django_capture_on_commit_callbacks)

    second = ModelCall.objects.filter(experiment=offline_memory, round=2)
    shares: dict[str, list[float]] = {}
    for call in second:
        shares.setdefault(call.role, []).append(call.prefix_stable_share)
    assert set(shares) == {"DM", "Thorin", "Cassia"}
    assert all(0.0 < share <= 1.0 for values in shares.values() for share in values)
    per_agent = {a["role"]: a["prefix_stable_share"] for a in job.result["usage"]["agents"]}
    assert per_agent == {role: round(sum(v) / len(v), 4) for role, v in shares.items()}


def test_recording_a_step_twice_keeps_one_row_with_the_latest_counts(campaign):
    for tokens in (10, 12):
        model_call_record(
            experiment=campaign,
            key="round:1:narrate:DM",
            round=1,
            role="DM",
            step="narrate",
            model="offline",
            messages=MESSAGES,
            usage=Usage(tokens_in=tokens, tokens_cached=4, tokens_out=3),
        )
    (call,) = ModelCall.objects.filter(experiment=campaign)
    assert (call.tokens_in, call.tokens_cached, call.tokens_out) == (12, 4, 3)
    assert call.prefix_stable_share is None  # its own earlier version is not "previous"


def test_the_summary_adds_up_per_agent_with_the_saving_in_cached_tokens(campaign):
    for key, role, usage in [
        ("a", "DM", Usage(100, 60, 10)),
        ("b", "DM", Usage(100, 80, 10)),
        ("c", "Thorin", Usage(50, 0, 5)),
    ]:
        model_call_record(
            experiment=campaign, key=key, round=1, role=role, step="act", model="m",
            messages=MESSAGES, usage=usage,
        )  # fmt: skip
    summary = usage_summary(experiment=campaign, round=1)
    dm, thorin = summary["agents"]
    assert (dm["role"], dm["calls"], dm["tokens_in"], dm["saving_tokens"]) == ("DM", 2, 200, 140)
    assert dm["cached_share"] == 0.7
    assert dm["prefix_stable_share"] == 1.0  # the second call repeated the first's bytes
    assert (thorin["tokens_in"], thorin["saving_tokens"]) == (50, 0)
    assert summary["total"] == {
        "calls": 3,
        "failed": 0,
        "tokens_in": 250,
        "tokens_cached": 140,
        "tokens_out": 25,
        "saving_tokens": 140,
        "cached_share": 0.56,
    }


# -- Gemini --------------------------------------------------------------------------------


def test_a_gemini_round_records_the_sdks_usage_metadata(
    on_gemini, owner, gemini_standin, django_capture_on_commit_callbacks
):
    play(on_gemini, owner, django_capture_on_commit_callbacks)
    calls = list(ModelCall.objects.filter(experiment=on_gemini).order_by("id"))
    sent = generate_requests(gemini_standin)
    assert len(calls) == len(sent) >= 3
    assert [c.tokens_in for c in calls] == [(len(r.prompt.encode()) + 3) // 4 for r in sent]
    assert all(c.tokens_cached == 0 and c.cache_name == "" for c in calls)  # caching off
    assert not gemini_standin.caches


def test_with_caching_on_each_agents_prefix_is_cached_and_reused_while_unchanged(
    campaign, settings, caching, gemini_standin
):
    use_gemini(settings, gemini_standin)
    client = client_for(GEMINI, llm_settings())
    first = model_call_complete(experiment=campaign, role="DM", client=client, messages=MESSAGES)
    second = model_call_complete(
        experiment=campaign,
        role="DM",
        client=client,
        messages=[*MESSAGES[:2], {"role": "user", "content": "Narrate round 2."}],
    )
    assert len(gemini_standin.caches) == 1  # created once, reused by name
    (name,) = gemini_standin.caches
    assert first.usage.cache_name == second.usage.cache_name == name
    assert second.usage.tokens_cached == (len(SYSTEM.encode()) + 3) // 4
    assert all(r.json["cachedContent"] == name for r in generate_requests(gemini_standin))
    assert gemini_standin.caches[name]["ttl"] == "600s"


def test_a_changed_prefix_gets_a_new_cache_and_another_agent_gets_its_own(
    campaign, settings, caching, gemini_standin
):
    use_gemini(settings, gemini_standin)
    client = client_for(GEMINI, llm_settings())
    changed = [{"role": "system", "content": SYSTEM + " The bell rang."}, *MESSAGES[1:]]
    a = model_call_complete(experiment=campaign, role="DM", client=client, messages=MESSAGES)
    b = model_call_complete(experiment=campaign, role="DM", client=client, messages=changed)
    c = model_call_complete(experiment=campaign, role="Thorin", client=client, messages=MESSAGES)
    names = {a.usage.cache_name, b.usage.cache_name, c.usage.cache_name}
    assert len(names) == 3 and len(gemini_standin.caches) == 3


def test_a_prefix_under_the_token_floor_goes_out_plain(campaign, settings, caching, gemini_standin):
    use_gemini(settings, gemini_standin)
    settings.BABEL_GEMINI_CACHE_MIN_TOKENS = count(SYSTEM) + 1
    client = client_for(GEMINI, llm_settings())
    done = model_call_complete(experiment=campaign, role="DM", client=client, messages=MESSAGES)
    (request,) = gemini_standin.requests
    assert "cachedContent" not in request.json
    assert request.json["systemInstruction"]["parts"][0]["text"] == SYSTEM
    assert (done.usage.tokens_cached, done.usage.cache_name) == (0, "")


def test_a_failed_cache_creation_falls_back_to_a_plain_call(
    campaign, settings, caching, gemini_standin
):
    use_gemini(settings, gemini_standin)
    gemini_standin.cache_create_status = 400
    client = client_for(GEMINI, llm_settings())
    done = model_call_complete(experiment=campaign, role="DM", client=client, messages=MESSAGES)
    assert done.text and done.usage.cache_name == ""
    assert "cachedContent" not in generate_requests(gemini_standin)[0].json
    # The refusal is remembered: the next call does not try to create the cache again.
    model_call_complete(experiment=campaign, role="DM", client=client, messages=MESSAGES)
    creations = [r for r in gemini_standin.requests if r.path.endswith("/cachedContents")]
    assert len(creations) == 1


def test_a_cache_the_provider_dropped_is_forgotten_and_the_call_made_plain(
    campaign, settings, caching, gemini_standin
):
    use_gemini(settings, gemini_standin)
    client = client_for(GEMINI, llm_settings())
    model_call_complete(experiment=campaign, role="DM", client=client, messages=MESSAGES)
    gemini_standin.caches.clear()  # expired on the provider's side
    retried = model_call_complete(experiment=campaign, role="DM", client=client, messages=MESSAGES)
    assert retried.usage.cache_name == ""
    last = generate_requests(gemini_standin)[-1].json
    assert "cachedContent" not in last and "systemInstruction" in last
    again = model_call_complete(experiment=campaign, role="DM", client=client, messages=MESSAGES)
    assert again.usage.cache_name in gemini_standin.caches  # a fresh cache was made


def test_only_the_frozen_prefix_is_cached_and_the_rest_of_the_system_leads_the_contents(
    campaign, settings, caching, gemini_standin
):
    use_gemini(settings, gemini_standin)
    client = client_for(GEMINI, llm_settings())
    frozen = SYSTEM.strip()
    for number in (1, 2):  # the state changes with the round; the frozen part does not
        system = f"{frozen}\n\n## World state (round {number})\nFlags: none"
        model_call_complete(
            experiment=campaign,
            role="DM",
            client=client,
            messages=[{"role": "system", "content": system}, *MESSAGES[1:]],
            frozen_prefix=frozen,
        )
    (cached,) = gemini_standin.caches.values()  # one cache, reused in round 2
    assert cached["systemInstruction"]["parts"][0]["text"] == frozen
    last = generate_requests(gemini_standin)[-1].json
    assert "systemInstruction" not in last
    assert last["contents"][0]["parts"][0]["text"] == "## World state (round 2)\nFlags: none"
    assert gemini_standin.requests[-1].prompt.startswith(frozen)  # the model reads it all


def test_a_cached_gemini_campaign_reuses_each_agents_cache_across_rounds(
    on_gemini, caching, owner, gemini_standin, django_capture_on_commit_callbacks
):
    play(on_gemini, owner, django_capture_on_commit_callbacks)
    job = play(on_gemini, owner, django_capture_on_commit_callbacks)
    calls = ModelCall.objects.filter(experiment=on_gemini)
    assert calls.count() >= 6
    assert all(c.cache_name in gemini_standin.caches and c.tokens_cached > 0 for c in calls)
    # One cache per agent: the frozen prefix did not change between the rounds.
    assert len(gemini_standin.caches) == 3
    assert {c.role: c.cache_name for c in calls.filter(round=1)} == {
        c.role: c.cache_name for c in calls.filter(round=2)
    }
    saving = job.result["usage"]["total"]["saving_tokens"]
    assert saving == sum(c.tokens_cached for c in calls.filter(round=2)) > 0


# -- OpenAI-compatible ---------------------------------------------------------------------


def test_openai_rounds_read_cached_tokens_from_the_usage_block(
    offline_memory, settings, owner, openai_standin, monkeypatch, django_capture_on_commit_callbacks
):
    settings.OPENAI_BASE_URL = openai_standin.base_url
    settings.LLM_TIMEOUT_SECONDS = 2
    monkeypatch.setattr(steps, "_sleep", lambda seconds: None)
    offline_memory.participants.update(model="openai:local")
    play(offline_memory, owner, django_capture_on_commit_callbacks)
    play(offline_memory, owner, django_capture_on_commit_callbacks)
    second = {c.role: c for c in ModelCall.objects.filter(experiment=offline_memory, round=2)}
    assert set(second) == {"DM", "Thorin", "Cassia"}
    # Each agent's system message (its stable prefix) comes first and was sent before.
    assert all(0 < c.tokens_cached < c.tokens_in for c in second.values())
    for request in openai_standin.calls:
        roles = [m["role"] for m in request.json["messages"]]
        assert roles[0] == "system" and "system" not in roles[1:]


# -- per-agent model settings --------------------------------------------------------------


def test_each_agents_temperature_and_max_tokens_reach_gemini(
    on_gemini, owner, gemini_standin, django_capture_on_commit_callbacks
):
    on_gemini.participants.filter(role="DM").update(temperature=0.2, max_output_tokens=900)
    on_gemini.participants.filter(role="Thorin").update(temperature=1.8)
    play(on_gemini, owner, django_capture_on_commit_callbacks)
    asked = [r for r in generate_requests(gemini_standin) if not is_repair(r)]
    configs = [r.json.get("generationConfig", {}) for r in asked]
    dm, thorin, cassia = configs[:3]
    assert (dm["temperature"], dm["maxOutputTokens"]) == (0.2, 900)
    assert thorin["temperature"] == 1.8 and "maxOutputTokens" not in thorin
    assert "temperature" not in cassia and "maxOutputTokens" not in cassia


def test_each_agents_settings_reach_an_openai_compatible_server(
    offline_memory, settings, owner, openai_standin, monkeypatch, django_capture_on_commit_callbacks
):
    settings.OPENAI_BASE_URL = openai_standin.base_url
    monkeypatch.setattr(steps, "_sleep", lambda seconds: None)
    offline_memory.participants.update(model="openai:local")
    offline_memory.participants.filter(role="Cassia").update(temperature=0.0, max_output_tokens=64)
    play(offline_memory, owner, django_capture_on_commit_callbacks)
    dm, thorin, cassia = [r.json for r in openai_standin.calls if not is_repair(r)][:3]
    assert (cassia["temperature"], cassia["max_tokens"]) == (0.0, 64)
    assert "temperature" not in dm and "max_tokens" not in thorin


def test_a_failed_usage_write_never_costs_the_step_its_turns(
    offline_memory, owner, monkeypatch, django_capture_on_commit_callbacks
):
    def broken(**fields):
        raise DatabaseError("disk full")

    monkeypatch.setattr(usage_service, "model_call_record", broken)
    offline_memory.participants.update(model="offline")
    job = play(offline_memory, owner, django_capture_on_commit_callbacks)
    assert job.status == "succeeded"
    assert all(step["status"] == "ok" for step in job.result["steps"])
    assert not ModelCall.objects.filter(experiment=offline_memory).exists()


# -- memory workers ------------------------------------------------------------------------


def test_a_digest_by_the_model_is_recorded_as_a_memory_worker_call(
    campaign, settings, gemini_standin
):
    from campaigns.services.memory import summarize_audience
    from tests.factories import make_turn
    from tests.standins.server import standin_tokens

    use_gemini(settings, gemini_standin)
    gemini_standin.script(["500"])  # a failed attempt: recorded, with no tokens
    make_turn(campaign, round=1, content="The Mirrorgate opens at dusk.", hinge=True)
    (summary,) = summarize_audience(experiment=campaign, audience=["DM"], round_to=1, force=True)
    assert summary.method == "llm"

    failed, call = ModelCall.objects.filter(experiment=campaign).order_by("id")
    assert (failed.status, failed.tokens_in, failed.step) == ("failed", 0, "digest")
    assert "HTTP 500" in failed.error and failed.duration_ms is not None
    assert call.status == "ok"
    answered = gemini_standin.requests[-1]
    assert (call.role, call.step, call.model) == ("", "digest", GEMINI)
    assert call.tokens_in == standin_tokens(answered.prompt)
    assert call.tokens_out > 0
    assert call.prefix_stable_share is None  # the worker's first call
    summary_row = usage_summary(experiment=campaign)
    assert [(a["role"], a["calls"], a["failed"]) for a in summary_row["agents"]] == [("", 2, 1)]


def test_a_rerun_of_the_same_memory_prompt_is_counted_once(campaign, settings, gemini_standin):
    use_gemini(settings, gemini_standin)
    client = client_for(GEMINI, llm_settings())
    for _ in range(2):  # a retried task asks the same thing again
        with usage_service.worker_usage(experiment=campaign, worker="vet"):
            client.complete(MESSAGES)
    other = [*MESSAGES[:-1], {"role": "user", "content": "Vet these terms."}]
    with usage_service.worker_usage(experiment=campaign, worker="vet"):
        client.complete(other)
    assert len(gemini_standin.requests) == 3
    calls = list(ModelCall.objects.filter(experiment=campaign, step="vet").order_by("id"))
    assert len(calls) == 2
    # Stability is the worker's own: the second prompt shares the first's system prefix.
    assert calls[1].prefix_stable_share is not None and calls[1].prefix_stable_share > 0.5


def test_calls_made_before_a_worker_fails_are_still_recorded(campaign, settings, gemini_standin):
    use_gemini(settings, gemini_standin)
    client = client_for(GEMINI, llm_settings())
    with (
        pytest.raises(RuntimeError),
        usage_service.worker_usage(experiment=campaign, worker="define"),
    ):
        client.complete(MESSAGES)
        raise RuntimeError("the worker broke after its call")
    assert ModelCall.objects.filter(experiment=campaign, step="define").count() == 1


def test_a_definition_and_the_relay_are_kept_apart(
    campaign, settings, gemini_standin, django_capture_on_commit_callbacks
):
    from tests.factories import make_turn

    use_gemini(settings, gemini_standin)
    with django_capture_on_commit_callbacks(execute=True):
        make_turn(
            campaign,
            round=1,
            content="The void-wraiths hum in their jars. Sailors fear void-wraiths.",
        )
    calls = list(ModelCall.objects.filter(experiment=campaign))
    assert [(c.role, c.step) for c in calls] == [("", "define")]
    # Outside a memory worker nothing is collected: a plain call records no row.
    client = client_for(GEMINI, llm_settings())
    client.complete(MESSAGES)
    assert ModelCall.objects.filter(experiment=campaign).count() == 1


def test_an_openai_compatible_memory_call_is_recorded_with_its_cached_tokens(
    campaign, settings, openai_standin
):
    settings.OPENAI_BASE_URL = openai_standin.base_url
    client = client_for("openai:local", llm_settings())
    for _ in range(2):
        with usage_service.worker_usage(experiment=campaign, worker="digest"):
            client.complete_json(
                [*MESSAGES, {"role": "user", "content": f"Digest {_}."}],
                schema={"type": "object", "properties": {}},
            )
    first, second = ModelCall.objects.filter(experiment=campaign).order_by("id")
    assert (first.model, first.step, first.role) == ("openai:local", "digest", "")
    assert first.tokens_cached == 0
    assert second.tokens_cached > 0  # the server had seen the same prefix
