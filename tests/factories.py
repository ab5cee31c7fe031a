"""Factories for the campaign models. They go through the services, like real writers."""

from __future__ import annotations

import itertools

from django.contrib.auth import get_user_model

from campaigns.models import Experiment, Participant, Turn
from campaigns.services.experiments import experiment_create, participant_create
from campaigns.services.turns import turn_create

_names = itertools.count(1)


def make_user(username: str | None = None, **extra):
    User = get_user_model()
    username = username or f"user{next(_names)}"
    user = User.objects.create_user(username=username, password="pw-" + username, **extra)
    return user


def make_experiment(
    *, owner=None, roles=("DM", "Thorin", "Cassia"), config=None, **fields
) -> Experiment:
    experiment = experiment_create(
        name=fields.pop("name", f"Campaign {next(_names)}"),
        hook=fields.pop("hook", "A door appears at low tide."),
        rules=fields.pop("rules", "Be kind to the dice."),
        config=config,
        owner=owner,
        **fields,
    )
    for index, role in enumerate(roles):
        kind = Participant.Kind.DM if role == "DM" else Participant.Kind.PLAYER
        participant_create(
            experiment=experiment, role=role, kind=kind, order=index, bio=f"{role}'s bio."
        )
    return experiment


def make_turn(experiment: Experiment, **fields) -> Turn:
    defaults = {"round": 1, "speaker": "DM", "kind": "narrative", "content": "The tide turns."}
    defaults.update(fields)
    return turn_create(experiment=experiment, **defaults)
