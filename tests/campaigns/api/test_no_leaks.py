"""Acceptance: a player-linked user never obtains another role's whisper, a GM note,
another player's monologue or secret goal — through any endpoint, with any parameters,
including lore, summaries, context and task results.

Markers planted by `secrets_campaign` are searched for in the raw response bytes.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from campaigns.models import Experiment, LoreEntry, Turn
from tests.campaigns.api.conftest import ALLOWED, FORBIDDEN
from tests.factories import make_turn

pytestmark = pytest.mark.django_db

ROLES = ["DM", "Thorin", "Cassia", "Judge", "Nobody", ""]
INPUTS = ["", "trapdoor ledger doubt twist", "whisper reply Cassia DM", "dmlore cassialore"]


def _get_urls(secrets) -> list[str]:
    """Every GET the API has, with every way of asking for more than one should see."""
    e = f"/api/experiments/{secrets.experiment.pk}"
    urls = ["/api/experiments/", f"{e}/", f"{e}/export/", f"/api/tasks/{secrets.job.pk}/"]
    urls.append(f"{e}/arena/")
    urls.extend(f"{e}/log/?format={fmt}" for fmt in ("md", "html"))
    urls.extend(f"{e}/log/?as={role}&format={fmt}" for role in ROLES for fmt in ("md", "html"))
    urls.extend([f"{e}/usage/", f"{e}/usage/?round=1", f"{e}/usage/?round=1&as=DM"])
    for base in ("participants", "turns", "lore", "summaries", "facts"):
        urls.append(f"{e}/{base}/")
        urls.extend(f"{e}/{base}/?as={role}" for role in ROLES)
    urls.extend(f"{e}/turns/?kind={kind}" for kind in Turn.Kind.values)
    urls.extend(f"{e}/turns/?kind={kind}&as=DM" for kind in Turn.Kind.values)
    urls.extend(f"{e}/turns/?round={r}&page_size=1&page={p}" for r in (0, 1) for p in (1, 2, 9))
    urls.extend(f"{e}/lore/{entry.pk}/" for entry in secrets.lore.values())
    urls.extend(f"{e}/lore/{entry.pk}/?as=DM" for entry in secrets.lore.values())
    for role in ROLES[:3]:
        for text in INPUTS:
            urls.append(f"{e}/context/{role}/?input={text}")
            urls.append(f"{e}/context/{role}/?input={text}&debug=true&as=DM")
    return urls


def _sweep(client, urls) -> str:
    bodies = []
    for url in urls:
        response = client.get(url)
        assert response.status_code < 500, url
        bodies.append(response.content.decode("utf-8"))
    return "\n".join(bodies)


def _leaks(text: str) -> list[str]:
    return [name for name, marker in FORBIDDEN.items() if marker in text]


def test_the_player_obtains_nothing_private_from_any_get(api, secrets_campaign, player):
    seen = _sweep(api(player), _get_urls(secrets_campaign))
    assert _leaks(seen) == []
    # The sweep reached real content: everything Thorin may read did come back.
    assert [name for name, marker in ALLOWED.items() if marker not in seen] == []


def test_the_owner_sweep_finds_every_marker(api, secrets_campaign, owner):
    """Control: the markers are reachable, so their absence above means something."""
    seen = _sweep(api(owner), _get_urls(secrets_campaign))
    assert sorted(set(FORBIDDEN) - set(_leaks(seen))) == []


def test_whisper_existence_never_carries_whisper_content(api, secrets_campaign, player):
    Experiment.objects.filter(pk=secrets_campaign.experiment.pk).update(
        config={"show_whisper_existence": True}
    )
    seen = _sweep(api(player), _get_urls(secrets_campaign))
    assert _leaks(seen) == []


def test_a_players_own_posts_cannot_pull_private_text(api, secrets_campaign, player):
    """Writes echo only what was written: even a turn naming private roles leaks nothing."""
    url = f"/api/experiments/{secrets_campaign.experiment.pk}/turns/"
    bodies = [
        {"round": 1, "speaker": "Thorin", "kind": "action", "content": "I look around."},
        {"round": 1, "speaker": "Cassia", "kind": "action", "content": "Impersonation."},
        {"round": 1, "speaker": "Thorin", "kind": "whisper", "content": "?", "visibility": ["DM"]},
    ]
    seen = [api(player).post(url, body, format="json").content.decode() for body in bodies]
    assert _leaks("\n".join(seen)) == []


def _paths(secrets) -> list[str]:
    e = f"/api/experiments/{secrets.experiment.pk}"
    lore = [f"{e}/lore/{entry.pk}/" for entry in secrets.lore.values()]
    context = [f"{e}/context/{role}/" for role in ("DM", "Thorin", "Cassia", "Judge")]
    lists = [f"{e}/{name}/" for name in ("participants", "turns", "lore", "summaries")]
    return [*lists, *lore, *context, f"/api/tasks/{secrets.job.pk}/", f"{e}/export/"]


NOISE = st.text(max_size=12)
PARAMS = st.fixed_dictionaries(
    {},
    optional={
        "as": st.one_of(st.sampled_from(ROLES), NOISE),
        "round": st.one_of(st.sampled_from(["0", "1", "2", "-1", "1e9"]), NOISE),
        "kind": st.one_of(st.sampled_from(Turn.Kind.values), NOISE),
        "page": st.sampled_from(["1", "2", "0", "x"]),
        "page_size": st.sampled_from(["1", "3", "500", "0"]),
        "input": st.one_of(st.sampled_from(INPUTS), NOISE),
        "debug": st.sampled_from(["true", "false", "1"]),
    },
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(choice=st.integers(min_value=0, max_value=50), params=PARAMS)
def test_no_parameters_make_any_endpoint_leak(api, secrets_campaign, player, choice, params):
    paths = _paths(secrets_campaign)
    response = api(player).get(paths[choice % len(paths)], params)
    assert response.status_code < 500
    assert _leaks(response.content.decode("utf-8")) == []


def test_nothing_leaks_after_the_memory_pipeline_ran(
    api, secrets_campaign, owner, player, django_capture_on_commit_callbacks
):
    """Derived artifacts too: after a /checkpoint (World Bible extraction from every turn,
    a digest per audience) the player's sweep still finds no private text."""
    url = f"/api/experiments/{secrets_campaign.experiment.pk}/commands/"
    make_turn(  # a private coined term, named twice: the World Bible makes a private entry
        secrets_campaign.experiment,
        round=1,
        speaker="Cassia",
        kind="whisper",
        content="Cassia, to the DM: the Vexhollow key is mine. Keep the Vexhollow key.",
        visibility=["Cassia", "DM"],
    )
    with django_capture_on_commit_callbacks(execute=True):
        response = api(owner).post(url, {"command": "checkpoint"}, format="json")
    assert response.status_code == 202
    assert api(owner).get(f"/api/tasks/{response.json()['task_id']}/").json()["status"] == (
        "succeeded"
    )
    # The pipeline really derived private artifacts for the sweep to look for.
    private_extracted = LoreEntry.objects.filter(origin="extracted", audience__isnull=False)
    assert private_extracted.exists()
    seen = _sweep(api(player), _get_urls(secrets_campaign))
    assert _leaks(seen) == []


QUERIES = st.one_of(
    st.sampled_from(
        [
            *(marker.replace("-", " ") for marker in FORBIDDEN.values()),
            *FORBIDDEN.values(),
            "trapdoor ledger doubt twist",
            "dmlore cassialore ZQXdmlore",
            "0..9",
            "1",
            "0-1",
        ]
    ),
    NOISE,
)


def _answer(response) -> str:
    """The response without the echo of the caller's own query (that is not a leak)."""
    if response.status_code == 200:
        data = response.json()
        data.pop("query", None)
        return json.dumps(data)
    return response.content.decode("utf-8")


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    command=st.sampled_from(["search", "lore", "timeline"]),
    query=QUERIES,
    role=st.sampled_from([None, "Thorin", "Cassia", "DM"]),
)
def test_active_retrieval_never_leaks_text_or_counts(
    api, secrets_campaign, player, owner, command, query, role
):
    """/search, /lore, /timeline as the player (any role asked), and as the owner *for*
    Thorin: the answer and Thorin's next pack hold nothing Thorin may not read."""
    e = f"/api/experiments/{secrets_campaign.experiment.pk}"
    body = {"command": command, "query": query, **({"role": role} if role else {})}
    response = api(player).post(f"{e}/commands/", body, format="json")
    assert response.status_code in (200, 400, 403, 404), response.content
    assert _leaks(_answer(response)) == []
    as_thorin = {"command": command, "query": query, "role": "Thorin"}
    response = api(owner).post(f"{e}/commands/", as_thorin, format="json")
    assert response.status_code in (200, 400), response.content
    assert _leaks(_answer(response)) == []
    pack = api(player).get(f"{e}/context/Thorin/", {"debug": "true"})
    assert pack.status_code == 200
    assert _leaks(pack.content.decode("utf-8")) == []


def test_active_retrieval_finds_what_the_role_may_read_and_pins_it(
    api, secrets_campaign, player, owner
):
    """Control for the property above: the commands do return readable text, the owner
    (reading the whole log) gets private text, and the player's pin reaches its pack."""
    e = f"/api/experiments/{secrets_campaign.experiment.pk}"
    found = api(player).post(
        f"{e}/commands/", {"command": "timeline", "query": "0..9"}, format="json"
    )
    assert found.status_code == 200 and found.json()["pinned"] is True
    assert ALLOWED["public"] in found.content.decode()
    assert ALLOWED["thorin_whisper"] in found.content.decode()
    pack = api(player).get(f"{e}/context/Thorin/")
    assert ALLOWED["thorin_whisper"] in pack.content.decode()
    everything = api(owner).post(
        f"{e}/commands/", {"command": "timeline", "query": "0..9"}, format="json"
    )
    assert FORBIDDEN["gm_note"] in everything.content.decode()
    assert everything.json()["pinned"] is False  # the owner reads the log; no pack to pin
