"""Usage metadata, sampling settings and Gemini's context cache, through the real SDKs."""

from __future__ import annotations

import pytest

from context_engine.llm import (
    GenerationOptions,
    OfflineClient,
    PermanentLLMError,
    client_for,
    prefix_fingerprints,
    prompt_bytes,
    stable_share,
)
from context_engine.tokens import count
from tests.standins.server import standin_tokens

SYSTEM = "You are the DM. " * 40
MESSAGES = [
    {"role": "system", "content": SYSTEM},
    {"role": "user", "content": "Recent: the gate creaks."},
    {"role": "user", "content": "Narrate round 1."},
]


# -- prefix stability --------------------------------------------------------------------


def test_an_identical_prompt_is_fully_stable():
    data = prompt_bytes(MESSAGES)
    blocks = prefix_fingerprints(data)
    share = stable_share(blocks, blocks, len(data))
    assert share == 1.0


def test_a_change_at_the_end_keeps_the_prefix_share_and_a_change_at_the_start_loses_it():
    before = prompt_bytes(MESSAGES)
    tail = prompt_bytes([*MESSAGES[:2], {"role": "user", "content": "Narrate round 2."}])
    head = prompt_bytes([{"role": "system", "content": "X" + SYSTEM}, *MESSAGES[1:]])
    tail_share = stable_share(prefix_fingerprints(before), prefix_fingerprints(tail), len(tail))
    head_share = stable_share(prefix_fingerprints(before), prefix_fingerprints(head), len(head))
    assert tail_share is not None and 0.85 < tail_share < 1.0
    assert head_share == 0.0


def test_an_agents_first_call_has_no_share():
    data = prompt_bytes(MESSAGES)
    assert stable_share(None, prefix_fingerprints(data), len(data)) is None


# -- usage metadata ----------------------------------------------------------------------


def test_offline_usage_counts_with_the_project_counter_and_caches_nothing():
    completion = OfflineClient().complete_with_usage(MESSAGES)
    usage = completion.usage
    assert usage.tokens_in == sum(count(m["content"]) for m in MESSAGES)
    assert usage.tokens_out == count(completion.text) > 0
    assert usage.tokens_cached == 0


def test_openai_usage_reports_the_prefix_shared_with_the_previous_request(
    openai_settings, openai_standin
):
    client = client_for("openai:local", openai_settings)
    first = client.complete_with_usage(MESSAGES).usage
    second = client.complete_with_usage(
        [*MESSAGES[:2], {"role": "user", "content": "Narrate round 2."}]
    ).usage
    assert first.tokens_cached == 0
    assert first.tokens_in > 0 and first.tokens_out > 0
    shared = "".join(f"{m['role']}\x00{m['content']}\x00" for m in MESSAGES[:2]) + "user\x00"
    assert second.tokens_cached >= standin_tokens(shared + "Narrate round ") - 1
    assert second.tokens_cached < second.tokens_in


def test_openai_gets_the_participants_temperature_and_max_tokens(openai_settings, openai_standin):
    client = client_for("openai:local", openai_settings)
    client.complete_with_usage(
        MESSAGES, options=GenerationOptions(temperature=0.3, max_output_tokens=77)
    )
    body = openai_standin.requests[-1].json
    assert (body["temperature"], body["max_tokens"]) == (0.3, 77)


def test_openai_without_settings_sends_no_sampling_fields(openai_settings, openai_standin):
    client_for("openai:local", openai_settings).complete_with_usage(MESSAGES)
    body = openai_standin.requests[-1].json
    assert "temperature" not in body and "max_tokens" not in body


def test_gemini_usage_and_sampling_settings(gemini_settings, gemini_standin):
    client = client_for("gemini-2.5-flash", gemini_settings)
    completion = client.complete_with_usage(
        MESSAGES, options=GenerationOptions(temperature=1.5, max_output_tokens=300)
    )
    config = gemini_standin.requests[-1].json["generationConfig"]
    assert (config["temperature"], config["maxOutputTokens"]) == (1.5, 300)
    assert completion.usage.tokens_in == standin_tokens(gemini_standin.requests[-1].prompt)
    assert completion.usage.tokens_cached == 0
    assert completion.usage.tokens_out == standin_tokens(completion.text)


# -- Gemini explicit caching ---------------------------------------------------------------


def test_gemini_cache_is_created_and_a_call_naming_it_reports_cached_tokens(
    gemini_settings, gemini_standin
):
    client = client_for("gemini-2.5-flash", gemini_settings)
    name = client.create_cache(system=SYSTEM, ttl_seconds=600)
    assert name in gemini_standin.caches
    stored = gemini_standin.caches[name]
    assert stored["ttl"] == "600s"
    assert stored["systemInstruction"]["parts"][0]["text"] == SYSTEM

    completion = client.complete_with_usage(MESSAGES, cached_content=name)
    body = gemini_standin.requests[-1].json
    assert body["cachedContent"] == name
    assert "systemInstruction" not in body  # the cache carries it; the API refuses both
    assert completion.usage.tokens_cached == standin_tokens(SYSTEM)
    assert completion.usage.cache_name == name
    assert completion.usage.tokens_in > completion.usage.tokens_cached


def test_a_gemini_call_naming_a_missing_cache_is_a_permanent_error(gemini_settings):
    client = client_for("gemini-2.5-flash", gemini_settings)
    with pytest.raises(PermanentLLMError):
        client.complete_with_usage(MESSAGES, cached_content="cachedContents/gone")


def test_the_gemini_standin_serves_get_and_delete_of_a_cache(gemini_settings, gemini_standin):
    client = client_for("gemini-2.5-flash", gemini_settings)
    name = client.create_cache(system=SYSTEM, ttl_seconds=60)
    sdk = client._client
    assert sdk.caches.get(name=name).name == name
    sdk.caches.delete(name=name)
    assert name not in gemini_standin.caches


def test_a_failed_cache_creation_is_an_llm_error(gemini_settings, gemini_standin):
    gemini_standin.cache_create_status = 500
    client = client_for("gemini-2.5-flash", gemini_settings)
    with pytest.raises(Exception) as caught:
        client.create_cache(system=SYSTEM, ttl_seconds=60)
    assert type(caught.value).__name__ == "TransientLLMError"
