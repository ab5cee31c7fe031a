"""The console's setup pages from the attacker's side (issue 24): a seated player (or an
outsider) sends the owner's requests as the browser would — to read every secret on the
cast page, to rewrite a seat (their own model, another's secret), to duplicate the
campaign into one they own (and so read its secrets), to start or stop play — and every
role reads the same campaign afterwards."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from campaigns.models import Experiment, Job, Participant
from tests.campaigns.api.conftest import FORBIDDEN, secrets_campaign  # noqa: F401

pytestmark = pytest.mark.django_db


def state():
    return (
        list(
            Experiment.objects.order_by("pk").values_list("pk", "name", "owner", "config", "status")
        ),
        list(
            Participant.objects.order_by("pk").values_list(
                "pk", "role", "model", "secret", "identity", "temperature", "user"
            )
        ),
        list(Job.objects.filter(kind__in=["play", "round"]).values_list("pk", "status", "result")),
    )


def seat_form(participant, **changes):
    fields = {
        "role": participant.role,
        "kind": participant.kind,
        "model": participant.model,
        "bio": participant.bio,
        "identity": participant.identity,
        "secret": participant.secret,
        "reveal_round": "",
        "temperature": "",
        "max_output_tokens": "",
        "order": str(participant.order),
    }
    fields.update(changes)
    return {f"p{participant.pk}-{key}": value for key, value in fields.items()}


@pytest.mark.parametrize("who", ["player", "stranger"])
def test_nobody_but_the_owner_side_reads_or_rewrites_the_setup(
    request,
    secrets_campaign,  # noqa: F811
    who,
):
    exp = secrets_campaign.experiment
    exp.participants.update(model="offline")
    attacker = Client()
    attacker.force_login(request.getfixturevalue(who))
    denied = 403 if who == "player" else 404
    thorin = exp.participants.get(role="Thorin")
    cassia = exp.participants.get(role="Cassia")
    play = Job.objects.create(experiment=exp, kind="play", status="running", result={})
    before = state()

    def u(name, *args):
        return reverse(name, args=[exp.pk, *args])

    attempts = [
        ("get", u("console:cast"), {}),
        ("get", u("console:settings"), {}),
        ("get", u("console:delete"), {}),
        ("post", u("console:participant", thorin.pk), seat_form(thorin, model="gemini-2.5-pro")),
        ("post", u("console:participant", cassia.pk), seat_form(cassia, secret="")),
        ("post", u("console:participant_remove", cassia.pk), {}),
        ("post", u("console:cast"), {"new-role": "Mole", "new-kind": "dm", "new-model": "offline"}),
        ("post", u("console:settings"), {"name": "Mine now", "strategy": "layered"}),
        ("post", u("console:duplicate"), {}),
        ("post", u("console:archive"), {}),
        ("post", u("console:delete"), {"confirm": exp.name}),
        ("post", u("console:play"), {"rounds": "50"}),
        ("post", u("console:play_stop", play.pk), {}),
    ]
    for method, path, data in attempts:
        response = getattr(attacker, method)(path, data, HTTP_HX_REQUEST="true")
        assert response.status_code == denied, (path, response.status_code)
        body = response.content.decode()
        for marker in ("cassia_secret", "dm_secret", "cassia_identity", "dm_identity"):
            assert FORBIDDEN[marker] not in body, (path, marker)

    assert state() == before
    # Every role reads the campaign it read before: the owner still owns the only copy.
    assert Experiment.objects.count() == 1
    owner_view = Client()
    owner_view.force_login(exp.owner)
    assert (
        FORBIDDEN["cassia_secret"]
        in owner_view.get(reverse("console:cast", args=[exp.pk])).content.decode()
    )
