"""API fixtures: token-authenticated clients per persona and a campaign full of secrets.

`secrets_campaign` plants marker strings in every kind of private thing a player must
never obtain (another role's whisper, GM notes, another player's monologue and secret
goal, DM-only lore, DM and Cassia digests, a job result); the leak tests sweep the API
for them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from campaigns.models import Fact, Job, LoreEntry, Summary
from campaigns.services.experiments import participant_create
from campaigns.services.lore import lore_create
from tests.factories import make_turn

# Text a player linked to Thorin must never receive, from any endpoint.
FORBIDDEN = {
    "cassia_whisper": "ZQX-cassia-whisper-to-dm",
    "dm_reply_to_cassia": "ZQX-dm-reply-to-cassia",
    "gm_note": "ZQX-gm-note-trapdoor",
    "cassia_monologue": "ZQX-cassia-monologue-doubt",
    "cassia_secret": "ZQX-cassia-secret-ledger",
    "dm_secret": "ZQX-dm-secret-twist",
    "dm_identity": "ZQX-dm-identity-prompt",
    "cassia_identity": "ZQX-cassia-identity-prompt",
    "dm_lore": "ZQXdmlore",
    "cassia_lore": "ZQXcassialore",
    "dm_digest": "ZQX-dm-digest",
    "cassia_strategy": "ZQX-cassia-strategic-summary",
    "job_result": "ZQX-job-result",
    "cassia_fact": "ZQX-cassia-fact-answer",
    "dm_fact": "ZQX-dm-fact-question",
}
# Text Thorin's player should see (proves the sweep reaches real content).
ALLOWED = {
    "public": "VIS-public-narrative",
    "thorin_whisper": "VIS-thorin-whisper",
    "thorin_monologue": "VIS-thorin-monologue",
    "thorin_secret": "VIS-thorin-secret",
    "public_lore": "VISpubliclore",
    "thorin_digest": "VIS-thorin-digest",
    "public_fact": "VIS-public-fact",
    "thorin_fact": "VIS-thorin-fact",
}


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    """Personas are made with passwords; PBKDF2 would dominate these tests' run time."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def client_for(user) -> APIClient:
    """An API client sending ``Authorization: Token …`` for ``user`` (anonymous if None)."""
    client = APIClient()
    if user is not None:
        token, _ = Token.objects.get_or_create(user=user)
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def api():
    """``api(user)`` → a token-authenticated APIClient."""
    return client_for


@dataclass
class Secrets:
    experiment: object
    lore: dict = field(default_factory=dict)
    job: object = None


def _summary(experiment, *, kind, audience, text, version=1):
    key = "*" if audience is None else "|" + "|".join(sorted(audience)) + "|"
    return Summary.objects.create(
        experiment=experiment,
        kind=kind,
        audience=audience,
        audience_key=key,
        round_from=1,
        round_to=1,
        covered_seq=3,
        text=text,
        sections=[["Hinge Index", text]],
        version=version,
    )


@pytest.fixture
def secrets_campaign(campaign, owner, player, other_player) -> Secrets:
    """The conftest `campaign` (DM, Thorin, Cassia) with one of every private thing."""
    campaign.participants.filter(role="Cassia").update(
        secret=FORBIDDEN["cassia_secret"], identity=FORBIDDEN["cassia_identity"]
    )
    campaign.participants.filter(role="DM").update(
        secret=FORBIDDEN["dm_secret"], identity=FORBIDDEN["dm_identity"]
    )
    campaign.participants.filter(role="Thorin").update(secret=ALLOWED["thorin_secret"])
    turns = [
        ("DM", "narrative", ALLOWED["public"], None),
        ("Cassia", "whisper", FORBIDDEN["cassia_whisper"], ["Cassia", "DM"]),
        ("DM", "whisper", FORBIDDEN["dm_reply_to_cassia"], ["DM", "Cassia"]),
        ("DM", "gm_note", FORBIDDEN["gm_note"], ["DM"]),
        ("Cassia", "monologue", FORBIDDEN["cassia_monologue"], ["Cassia"]),
        ("Thorin", "whisper", ALLOWED["thorin_whisper"], ["Thorin", "DM"]),
        ("Thorin", "monologue", ALLOWED["thorin_monologue"], ["Thorin"]),
    ]
    for speaker, kind, content, visibility in turns:
        make_turn(campaign, speaker=speaker, kind=kind, content=content, visibility=visibility)
    secrets = Secrets(experiment=campaign)
    for name, audience in (("dm_lore", ["DM"]), ("cassia_lore", ["Cassia", "DM"])):
        secrets.lore[name] = lore_create(
            experiment=campaign,
            user=owner,
            term=FORBIDDEN[name],
            category=LoreEntry.Category.TERM,
            definition=f"{FORBIDDEN[name]} is known only to {audience}.",
            audience=audience,
        )
    secrets.lore["public_lore"] = lore_create(
        experiment=campaign,
        user=owner,
        term=ALLOWED["public_lore"],
        category=LoreEntry.Category.LOCATION,
        definition=f"{ALLOWED['public_lore']} is the flooded archive.",
        audience=None,
    )
    _summary(campaign, kind="digest", audience=["DM"], text=FORBIDDEN["dm_digest"])
    _summary(campaign, kind="digest", audience=["Thorin"], text=ALLOWED["thorin_digest"])
    _summary(campaign, kind="strategic", audience=["Cassia"], text=FORBIDDEN["cassia_strategy"])
    for position, (key, audience, answer, question) in enumerate(
        [
            ("public", None, ALLOWED["public_fact"], "What is public?"),
            ("thorin", ["DM", "Thorin"], ALLOWED["thorin_fact"], "What did Thorin whisper?"),
            ("cassia", ["Cassia", "DM"], FORBIDDEN["cassia_fact"], "What did Cassia whisper?"),
            ("dm", ["DM"], "trapdoor", FORBIDDEN["dm_fact"]),
        ]
    ):
        Fact.objects.create(
            experiment=campaign,
            key=key,
            position=position,
            round=1,
            audience=audience,
            answer=[answer],
            question=question,
        )
    secrets.job = Job.objects.create(
        experiment=campaign,
        kind=Job.Kind.CHECKPOINT,
        status=Job.Status.SUCCEEDED,
        progress=100,
        result={"note": FORBIDDEN["job_result"]},
        user=owner,
    )
    return secrets


@pytest.fixture
def judge(secrets_campaign):
    """A user linked to a judge participant (reads the raw log, edits nothing)."""
    from tests.factories import make_user

    user = make_user("judge_user")
    participant_create(
        experiment=secrets_campaign.experiment, role="Judge", kind="judge", user=user
    )
    return user
