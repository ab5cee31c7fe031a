"""Issue 23 ask 6, from the attacker's side: a model answers the table with a GM note (or
another agent's secret goal), word for word. Before the guard the relay published it and
every player read it; now it is held for the DM's review, reaches no player anywhere —
turn list, pages, packs, search, digests, lore, counts — and the DM publishes or discards
it. The models are stand-ins on 127.0.0.1 speaking the OpenAI wire format."""

from __future__ import annotations

import pytest
from django.test import Client

from campaigns.models import OutputHold, RoundStep, Turn
from campaigns.services.context import pack_for_role
from campaigns.services.memory import run_command
from campaigns.services.relay import round_start
from campaigns.services.turns import turn_create
from tests.standins.server import Reply

pytestmark = pytest.mark.django_db

GM_NOTE = (
    "Quillmarrow the lighthouse keeper drowned the ferryman and hid the silver key "
    "beneath the chapel bell."
)
SECRET = "Cassia swore to the Saltmoth cartel that she would sink the harbour barge Vexhollow."
LEAKS = ("quillmarrow", "saltmoth", "vexhollow")


@pytest.fixture
def table(campaign, owner, player, other_player, settings, openai_standin):
    """DM, Thorin and Cassia all played by models on the OpenAI stand-in; a GM note and
    Cassia's secret goal that no other player reads."""
    settings.OPENAI_BASE_URL = openai_standin.base_url
    settings.LLM_TIMEOUT_SECONDS = 5
    for role in ("DM", "Thorin", "Cassia"):
        campaign.participants.filter(role=role).update(model=f"openai:{role.lower()}")
    campaign.participants.filter(role="Cassia").update(secret=SECRET)
    turn_create(experiment=campaign, round=0, speaker="DM", kind="gm_note", content=GM_NOTE)
    turn_create(
        experiment=campaign, round=0, speaker="DM", kind="narrative", content="The tide turns."
    )
    return campaign


def play_a_leaking_round(table, owner, openai_standin, capture):
    # The DM narrates, Thorin acts, Cassia acts (no whispers: no answer step).
    openai_standin.script(
        [
            Reply(text=f"PUBLIC: The wind howls. Rumour says {GM_NOTE.lower()} The bell tolls."),
            Reply(text=f'ACTION: I shout: "{SECRET}"'),
            Reply(text="PUBLIC: I keep my eyes on the water."),
        ]
    )
    with capture(execute=True):
        job = round_start(experiment=table, user=owner)
    job.refresh_from_db()
    return job


def everything_a_player_reads(api, user, experiment, role) -> str:
    """The player's whole view, as text: API turns, summaries, lore, search, their pack
    (with debug), the console's timeline, whispers, lore and memory pages."""
    client = api(user)
    base = f"/api/experiments/{experiment.pk}"
    parts = [
        client.get(f"{base}/turns/").content.decode(),
        client.get(f"{base}/summaries/").content.decode(),
        client.get(f"{base}/lore/").content.decode(),
        client.get(f"{base}/context/{role}/").content.decode(),
    ]
    for query in ("bell", "ferryman", "barge", "keeper"):
        found = client.post(f"{base}/commands/", {"command": "search", "query": query})
        parts.append(found.content.decode())
    browser = Client()
    browser.force_login(user)
    for page in ("", "whispers/", "lore/", "memory/", "notes/"):
        parts.append(browser.get(f"/campaigns/{experiment.pk}/{page}").content.decode())
    pack = pack_for_role(experiment=experiment, role=role)
    parts.extend(section.text for section in pack.sections)
    return "\n".join(parts).lower()


def test_a_model_quoting_a_gm_note_to_the_table_is_held_and_no_player_reads_it(
    api, table, owner, player, other_player, openai_standin, django_capture_on_commit_callbacks
):
    job = play_a_leaking_round(table, owner, openai_standin, django_capture_on_commit_callbacks)

    # The round went on: every step stored, two of them held.
    assert job.status == "succeeded", job.message
    assert "2 answer(s) held for the DM's review" in job.message
    steps = RoundStep.objects.filter(experiment=table, round=1, status="ok")
    assert {row.speaker: row.detail.get("held") for row in steps} == {
        "DM": 1,
        "Thorin": 1,
        "Cassia": 0,
    }
    held = Turn.objects.filter(experiment=table, held_at__isnull=False).order_by("seq")
    assert [t.speaker for t in held] == ["DM", "Thorin"]
    # Stored no wider than its reviewers, even for a reader that forgot the held rule.
    assert [t.visibility for t in held] == [["DM"], ["Thorin"]]
    with django_capture_on_commit_callbacks(execute=True):
        run_command(experiment=table, command="checkpoint", user=owner)

    for user, role in ((player, "Thorin"), (other_player, "Cassia")):
        seen = everything_a_player_reads(api, user, table, role)
        assert "the bell tolls" not in seen and "i shout" not in seen
        if role == "Thorin":
            assert not any(leak in seen for leak in LEAKS), role
        # Counted as if the held answers did not exist: the opening narration and Cassia's act.
        listed = api(user).get(f"/api/experiments/{table.pk}/turns/").json()
        assert listed["count"] == 2
        assert [t["content"] for t in listed["results"]] == [
            "The tide turns.",
            "I keep my eyes on the water.",
        ]
    # Players are refused the review list, whatever it holds.
    assert api(player).get(f"/api/experiments/{table.pk}/held/").status_code == 403

    # The DM sees both held, each with the quoted source.
    review = api(owner).get(f"/api/experiments/{table.pk}/held/").json()["results"]
    assert [(r["speaker"], r["meant_for"]) for r in review] == [("DM", None), ("Thorin", None)]
    dm_quote, thorin_quote = review[0]["quotes"][0], review[1]["quotes"][0]
    assert dm_quote["label"].startswith("GM note by DM")
    assert dm_quote["words"] >= 8
    assert GM_NOTE.lower().startswith(
        dm_quote["source"][dm_quote["source_start"] : dm_quote["source_end"]].lower()
    )
    assert review[0]["original"][dm_quote["start"] : dm_quote["end"]].lower() in GM_NOTE.lower()
    assert thorin_quote["label"] == "Cassia's secret goal"


def test_the_dm_publishes_one_held_answer_and_discards_the_other(
    api, table, owner, player, openai_standin, django_capture_on_commit_callbacks
):
    play_a_leaking_round(table, owner, openai_standin, django_capture_on_commit_callbacks)
    dm_turn, thorin_turn = Turn.objects.filter(experiment=table, held_at__isnull=False).order_by(
        "seq"
    )
    base = f"/api/experiments/{table.pk}/held"

    # A player cannot act on a held turn; a bad body names its field; nothing changes.
    assert api(player).post(f"{base}/{dm_turn.pk}/publish/", {}).status_code == 403
    bad = api(owner).post(f"{base}/{dm_turn.pk}/edit/", {"content": 5}, format="json")
    assert bad.status_code == 400 and "content" in bad.json()
    assert api(owner).post(f"{base}/{dm_turn.pk}/edit/", {}, format="json").status_code == 400
    assert api(owner).post(f"{base}/999999/publish/", {}, format="json").status_code == 404

    edited = "The wind howls. The bell tolls."
    published = api(owner).post(f"{base}/{dm_turn.pk}/publish/", {"content": edited}, format="json")
    discarded = api(owner).post(f"{base}/{thorin_turn.pk}/discard/")

    assert published.status_code == 200, published.json()
    assert published.json()["visibility"] is None and published.json()["held"] is False
    assert discarded.status_code == 204
    assert not Turn.objects.filter(pk=thorin_turn.pk).exists()
    hold = OutputHold.objects.get(seq=thorin_turn.seq)
    assert hold.status == "discarded" and SECRET in hold.original
    assert OutputHold.objects.get(seq=dm_turn.seq).status == "published"
    # The player now reads the DM's corrected narration, and still nothing hidden.
    seen = everything_a_player_reads(api, player, table, "Thorin")
    assert edited.lower() in seen
    assert not any(leak in seen for leak in LEAKS)
    # Decided once: a second publish or discard is a 404 (no longer a held turn).
    assert api(owner).post(f"{base}/{dm_turn.pk}/publish/", {}, format="json").status_code == 404
    assert api(owner).get(f"{base}/").json()["results"] == []
