"""Synthetic campaigns for `manage.py bench_context`: seeded, so reruns are comparable.

A campaign of N turns has a DM and four players, eight turns a round, a realistic mix of
kinds and audiences (public narration, whispers, GM notes, monologues, hinges), lore
entries and one digest per player. Rows are bulk-inserted with precomputed token counts.
"""

from __future__ import annotations

import random
from itertools import accumulate

from wordfreq import top_n_list

from campaigns.models import Experiment, LoreEntry, Participant, Summary, Turn, WorldState
from context_engine import tokens
from context_engine.types import DIGEST_HEADINGS
from context_engine.visibility import audience_key

PLAYERS = ("Thorin", "Cassia", "Wren", "Ossian")
ROLES = ("DM", *PLAYERS)
TURNS_PER_ROUND = 8
TERMS = ("tide-script", "lantern-moss", "brinewick oil", "ashfern tonic", "void-chisel")
VOCABULARY = tuple(top_n_list("en", 5000))
# Zipf-like weights: common words are common, most words are rare (as in real prose).
WEIGHTS = tuple(accumulate(1.0 / (rank + 10) for rank in range(len(VOCABULARY))))
TERM_RATE = 0.01  # share of turns that mention one of the campaign's coined terms


def _sentence(rng: random.Random, length: int) -> str:
    words = rng.choices(VOCABULARY, cum_weights=WEIGHTS, k=length)
    if rng.random() < TERM_RATE:
        words[rng.randrange(length)] = rng.choice(TERMS)
    return " ".join(words).capitalize() + "."


def _prose(rng: random.Random, sentences: int) -> str:
    return " ".join(_sentence(rng, rng.randint(8, 20)) for _ in range(sentences))


def turn_fields(rng: random.Random, index: int) -> dict:
    """The ``index``-th synthetic turn: round, speaker, kind, audience, content."""
    slot = index % TURNS_PER_ROUND
    round_ = index // TURNS_PER_ROUND + 1
    player = PLAYERS[(index // TURNS_PER_ROUND + slot) % len(PLAYERS)]
    fields = {"round": round_, "tags": [], "hinge": False, "visibility": None}
    if slot == 0:
        fields.update(speaker="DM", kind="narrative", content=_prose(rng, 3))
        fields["tags"] = [f"thread:t{round_ % 17}"]
    elif slot == 1:
        fields.update(speaker="DM", kind="choice", content=_prose(rng, 1))
    elif slot == 2:
        fields.update(speaker=player, kind="whisper", content=_prose(rng, 1))
        fields["visibility"] = sorted([player, "DM"])
    elif slot == 3:
        fields.update(speaker="DM", kind="gm_note", content=_prose(rng, 1), visibility=["DM"])
    elif slot == 4:
        fields.update(speaker=player, kind="monologue", content=_prose(rng, 1))
        fields["visibility"] = [player]
    else:
        fields.update(speaker=player, kind="action", content=_prose(rng, 2))
    if rng.random() < 0.03:
        fields["hinge"] = True
    return fields


def create_campaign(turn_count: int, *, seed: int = 7) -> Experiment:
    """A fresh experiment with ``turn_count`` turns (bulk insert, cached token counts)."""
    rng = random.Random(seed)
    experiment = Experiment.objects.create(
        name=f"bench {turn_count}",
        hook=_prose(rng, 3),
        rules=_prose(rng, 4),
        config={"strategy": "layered"},
    )
    WorldState.objects.create(
        experiment=experiment,
        flags={"door_open": True, "codex_bound": False},
        fields={
            f"field_{i}": {"value": _sentence(rng, 6), "mutations": i, "last_mutated_round": 0}
            for i in range(12)
        },
    )
    Participant.objects.bulk_create(
        Participant(
            experiment=experiment,
            role=role,
            kind="dm" if role == "DM" else "player",
            model="offline",
            bio=_prose(rng, 2),
            identity=_sentence(rng, 12),
            secret=_sentence(rng, 10) if role == "Cassia" else "",
            order=index,
        )
        for index, role in enumerate(ROLES)
    )
    batch: list[Turn] = []
    for index in range(turn_count):
        fields = turn_fields(rng, index)
        batch.append(
            Turn(
                experiment=experiment,
                seq=index + 1,
                tokens=tokens.count(fields["content"]),
                **fields,
            )
        )
        if len(batch) == 2000:
            Turn.objects.bulk_create(batch)
            batch = []
    Turn.objects.bulk_create(batch)
    last_round = (turn_count - 1) // TURNS_PER_ROUND + 1
    # The campaign clock stands at the last round, as after posting (`turn_create`) or an
    # import: the loader windows on it, and at 0 every pack would load the whole history.
    Experiment.objects.filter(pk=experiment.pk).update(current_round=last_round)
    experiment.current_round = last_round
    for index in range(60):
        term = TERMS[index] if index < len(TERMS) else f"{rng.choice(VOCABULARY)}-{index}"
        LoreEntry.objects.create(
            experiment=experiment,
            term=term,
            key=term.lower(),
            category="term",
            definition=_sentence(rng, 14),
            first_seen_round=1,
            last_seen_round=max(1, last_round - index),
            mention_count=rng.randint(1, 30),
            status="confirmed" if index % 3 else "proposed",
        )
    covered = max(0, last_round - 4)
    for player in PLAYERS:
        audience = [player]
        Summary.objects.create(
            experiment=experiment,
            kind="digest",
            audience=audience,
            audience_key=audience_key(tuple(audience)),
            round_from=0,
            round_to=covered,
            covered_seq=covered * TURNS_PER_ROUND,
            text="\n\n".join(f"## {heading}\n{_prose(rng, 4)}" for heading in DIGEST_HEADINGS),
            method="fallback",
        )
    return experiment


def append_turn(experiment: Experiment, rng: random.Random) -> Turn:
    """The campaign's next turn, as `create_campaign` would have written it, with the
    clock moved to its round: what happens before each agent's pack in play."""
    last = experiment.turns.order_by("-seq").values_list("seq", flat=True).first() or 0
    fields = turn_fields(rng, last)
    turn = Turn.objects.create(
        experiment=experiment, seq=last + 1, tokens=tokens.count(fields["content"]), **fields
    )
    if turn.round > experiment.current_round:
        Experiment.objects.filter(pk=experiment.pk).update(current_round=turn.round)
        experiment.current_round = turn.round
    return turn
