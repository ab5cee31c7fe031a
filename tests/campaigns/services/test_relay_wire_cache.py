"""The wire leak property with Gemini context caching on: a cached prefix is a new path.

The same random tables as `test_relay_wire`, with every Gemini agent's system instruction
cached (floor 0). A cache-creation body carries an agent's frozen prefix, and a call
naming a cache is answered as if that prefix came first, so both are checked: no marker
outside the agent's audience in a creation body or in a call together with the cache it
names, and no agent's call ever names a cache created from another agent's prompt.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings

from campaigns.services.relay import round_start
from tests.campaigns.services.test_relay_wire import (
    MARKER,
    MODELS,
    ROLES,
    Markers,
    _names,
    audiences,
    script_round,
    seed,
    table,
    wire_role,
)
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def _role_of_model(model: str) -> str:
    for role, name in MODELS.items():
        if model.removeprefix("models/") == name:
            return role
    raise AssertionError(f"a cache for an unknown model {model!r}")


@settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(spec=table)
def test_cached_prefixes_never_carry_or_serve_text_outside_the_agents_audience(
    spec, settings, gemini_standin, openai_standin, django_capture_on_commit_callbacks
):
    settings.GEMINI_API_KEY = "standin-key"
    settings.GEMINI_BASE_URL = gemini_standin.base_url
    settings.OPENAI_BASE_URL = openai_standin.base_url
    settings.LLM_TIMEOUT_SECONDS = 5
    settings.BABEL_GEMINI_CONTEXT_CACHE = True
    settings.BABEL_GEMINI_CACHE_MIN_TOKENS = 0
    gemini_standin.reset()
    openai_standin.reset()
    owner = make_user(f"owner{next(_names)}")
    mark = Markers()
    experiment = seed(spec, owner, mark)
    for number in range(2, 2 + spec["rounds"]):
        script_round(spec, number, mark, gemini_standin, openai_standin)
        with django_capture_on_commit_callbacks(execute=True):
            job = round_start(experiment=experiment, user=owner)
        job.refresh_from_db()
        assert job.status == "succeeded", job.message

    readable = audiences(experiment)

    def leaked(role: str, text: str) -> set[str]:
        return {m for m in MARKER.findall(text) if role not in readable.get(m, set(ROLES))}

    created_for: dict[str, str] = {}  # cache name → the agent whose prefix it holds
    creations = [r for r in gemini_standin.requests if r.path.endswith("/cachedContents")]
    assert creations, "caching was on: Gemini agents' prefixes should have been cached"
    for record in creations:
        role = _role_of_model(record.json["model"])
        body = record.body.decode("utf-8")
        assert not leaked(role, body), (
            f"{role}'s cached prefix carried {sorted(leaked(role, body))}"
        )
        for name, cached in gemini_standin.caches.items():
            if json.dumps(cached["systemInstruction"]) == json.dumps(
                record.json["systemInstruction"]
            ):
                created_for.setdefault(name, role)

    calls = [r for r in gemini_standin.requests if ":generateContent" in r.path or r.stream]
    assert calls, "the relay's model calls were seen (plain or streamed)"
    for record in [*calls, *openai_standin.calls]:
        role = wire_role(record)
        name = (record.json or {}).get("cachedContent")
        served = record.body.decode("utf-8")
        if name:
            assert created_for.get(name) == role, (
                f"{role} was served {created_for.get(name)}'s cache"
            )
            served += json.dumps(gemini_standin.caches[name])
        assert not leaked(role, served), f"{role}'s request carried {sorted(leaked(role, served))}"
        own = MARKER.findall(experiment.participants.get(role=role).secret)
        assert set(own) <= set(MARKER.findall(served))  # the cache does carry the prefix
