"""Issue 23, finding 1: World Bible vetting moved hidden text into public entries.

The attack needs nothing but a memory model (the normal production setup) and a
/checkpoint: the demo's GM note about Maelis Orrow and Cassia's whispers about the Codex
were sent in one vetting prompt with the public proposals, and each answer was applied by
*term* to every entry with that term. Players then read the GM note in the public "Maelis
Orrow" entry and Cassia's whisper in the public Codex entry: in the lore list, their packs
and the lore history. With a model answering every line, the last answer for a term
overwrote a DM-only entry with public text.

Here the stand-in Gemini plays both models (``vet_blend``, ``vet_lines``: see
`tests.standins.answers`), the DM checkpoints through the API, and every player reads
everything they can through the API and the console. The stand-in's request log shows
what each prompt held.
"""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse

from campaigns import demo
from campaigns.models import LoreEntry
from campaigns.services import transcripts
from tests.campaigns.services.memory_support import fingerprints_hidden_from, ngrams, use_gemini
from tests.factories import make_user
from tests.standins.answers import VET_LINE

pytestmark = pytest.mark.django_db

PLAYERS = ("Thorin", "Cassia", "Wren")
GM_NOTE = "not what she seems"  # the DM's round-4 note on Maelis Orrow
CASSIA_WHISPERS = ("whoever speaks it binds the codex", "so only the codex hears")


@pytest.fixture
def table(owner):
    """The demo with a user seated in every player's role."""
    experiment = transcripts.import_transcript(data=demo.transcript(), owner=owner)
    users = {}
    for role in PLAYERS:
        users[role] = make_user(f"{role.lower()}_player")
        experiment.participants.filter(role=role).update(user=users[role])
    return experiment, users


def checkpoint(api, owner, experiment, capture) -> None:
    with capture(execute=True):
        response = api(owner).post(
            f"/api/experiments/{experiment.pk}/commands/", {"command": "checkpoint"}, format="json"
        )
    assert response.status_code == 202, response.content
    assert experiment.lore.filter(revisions__actor="task:vet").exists()  # the model vetted


def api_pages(client, url: str) -> list[dict]:
    items = []
    while url:
        response = client.get(url)
        assert response.status_code == 200, response.content
        body = response.json()
        items += body["results"]
        url = body["next"]
    return items


def everything_read_by(api, user, role: str, experiment) -> dict[str, str]:
    """What ``user`` (seated as ``role``) reads of the World Bible: the API's lore list,
    the console's lore page and each entry's history, and their own pack with debug."""
    client = api(user)
    base = f"/api/experiments/{experiment.pk}"
    lore = api_pages(client, f"{base}/lore/")
    texts = {"api lore": json.dumps(lore, ensure_ascii=False)}
    pack = client.get(f"{base}/context/{role}/", {"debug": "true"})
    assert pack.status_code == 200
    texts["pack"] = json.dumps(pack.json(), ensure_ascii=False)
    browser = Client()
    browser.force_login(user)
    page = browser.get(reverse("console:lore", args=[experiment.pk]))
    assert page.status_code == 200
    texts["lore page"] = page.content.decode()
    for entry in lore:
        url = reverse("console:lore_history", args=[experiment.pk, entry["id"]])
        history = browser.get(url)
        assert history.status_code == 200
        texts[f"history of {entry['term']!r}"] = history.content.decode()
    return texts


def hidden_found(experiment, role: str, texts: dict[str, str]) -> list[str]:
    hidden = fingerprints_hidden_from(experiment, role)
    return sorted(
        f"{where}: {' '.join(gram)!r} from {hidden[gram]}"
        for where, text in texts.items()
        for gram in ngrams(text) & hidden.keys()
    )


def vetting_prompts(standin) -> list[str]:
    return [r.prompt for r in standin.requests if r.schema and "terms" in json.dumps(r.schema)]


def test_a_blending_model_cannot_carry_hidden_text_into_what_players_read(
    api, table, owner, settings, gemini_standin, django_capture_on_commit_callbacks
):
    experiment, users = table
    use_gemini(settings, gemini_standin)
    gemini_standin.set_default("vet_blend")

    checkpoint(api, owner, experiment, django_capture_on_commit_callbacks)

    for role, user in users.items():
        texts = everything_read_by(api, user, role, experiment)
        everything = " ".join(" ".join(text.lower().split()) for text in texts.values())
        assert GM_NOTE not in everything, role
        if role != "Cassia":
            assert not any(whisper in everything for whisper in CASSIA_WHISPERS), role
        assert hidden_found(experiment, role, texts) == [], role
    # The public entries were vetted by the model, from public text only.
    public = LoreEntry.objects.get(experiment=experiment, term="Maelis Orrow", audience_key="*")
    assert public.revisions.filter(actor="task:vet").exists()
    assert "Maelis Orrow is gone" in public.definition


def test_a_model_answering_every_line_leaves_each_entry_its_own_answer(
    api, table, owner, settings, gemini_standin, django_capture_on_commit_callbacks
):
    experiment, _ = table
    use_gemini(settings, gemini_standin)
    gemini_standin.set_default("vet_lines")

    checkpoint(api, owner, experiment, django_capture_on_commit_callbacks)

    private = LoreEntry.objects.get(experiment=experiment, term="Maelis Orrow", audience_key="|DM|")
    public = LoreEntry.objects.get(experiment=experiment, term="Maelis Orrow", audience_key="*")
    assert GM_NOTE in private.definition and "is gone" not in private.definition
    assert GM_NOTE not in public.definition
    # Every vetted entry holds the answer given for its own line of its own prompt.
    asked = {
        int(line["id"]): line["quotes"].split(" | ")[0]
        for prompt in vetting_prompts(gemini_standin)
        for line in (m.groupdict() for m in VET_LINE.finditer(prompt))
        if line["id"] is not None
    }
    vetted = LoreEntry.objects.filter(experiment=experiment, revisions__actor="task:vet")
    assert vetted.count() >= 10
    for entry in vetted:
        assert asked[entry.pk].startswith(entry.definition.rstrip("…")), entry.term


def test_every_memory_prompt_holds_one_audiences_text(
    api, table, owner, settings, gemini_standin, django_capture_on_commit_callbacks
):
    experiment, _ = table
    use_gemini(settings, gemini_standin)
    gemini_standin.set_default("vet_blend")

    checkpoint(api, owner, experiment, django_capture_on_commit_callbacks)

    roles = list(experiment.participants.values_list("role", flat=True))
    hidden = {role: fingerprints_hidden_from(experiment, role) for role in roles}
    audience_of = dict(experiment.lore.values_list("pk", "audience_key"))
    vetting = vetting_prompts(gemini_standin)
    assert len(vetting) >= 2
    for prompt in vetting:
        ids = [m.group("id") for m in VET_LINE.finditer(prompt)]
        assert ids and None not in ids, "every proposal line names the entry it is about"
        (key,) = {audience_of[int(i)] for i in ids}  # one audience per prompt
        members = roles if key == "*" else [r for r in key.split("|") if r]
        for role in members:
            assert not ngrams(prompt) & hidden[role].keys(), (key, role)
    # Digests, strategic summaries, definitions: each prompt is readable by some one role.
    others = [r.prompt for r in gemini_standin.requests if r.prompt not in vetting]
    assert others
    for prompt in others:
        assert any(not ngrams(prompt) & hidden[role].keys() for role in roles), prompt[:300]
