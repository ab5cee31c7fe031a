"""Property: the incremental World Bible equals a full recount.

Whatever the turns, their audiences and how hydration is cut up (turn tasks arriving out
of order, batches of any size), the vocabulary statistics and the lore entries end up
exactly as one pass over the whole log makes them.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from campaigns.models import LoreEntry, Turn, VocabularyStat
from campaigns.services.memory import hydrate_experiment, hydrate_turn
from campaigns.services.memory.hydrate import hydrate_batch
from tests.factories import make_experiment, make_turn, make_user

pytestmark = pytest.mark.django_db

SENTENCES = [
    "Gloomfen is cold.",
    "We walk to Gloomfen at dawn.",
    "A dwarf named Brannoc waves.",
    "Brannoc sells a void-chisel.",
    "The void-chisel hums.",
    'They keep a "trust ledger" here.',
    "The trust ledger grows.",
    "Captain Idris Vane bows.",
    "Meh, I'm tired.",
    "Mira drinks ashfern tonic.",
    "The ashfern tonic burns.",
    "OOC: pizza from Taco Bell.",
]
AUDIENCES = [None, None, ["Thorin", "DM"], ["Cassia", "DM"], ["DM"]]


@st.composite
def logs(draw):
    count = draw(st.integers(2, 12))
    turns = []
    for index in range(count):
        picks = draw(st.lists(st.sampled_from(SENTENCES), min_size=1, max_size=3))
        turns.append(
            {
                "round": index // 3 + 1,
                "content": " ".join(picks),
                "visibility": draw(st.sampled_from(AUDIENCES)),
                "tags": draw(st.sampled_from([[], [], ["dead:Idris Vane"], ["npc:Mira"]])),
            }
        )
    order = draw(st.permutations(range(count)))
    sizes = draw(st.lists(st.integers(1, 5), min_size=1, max_size=6))
    return turns, list(order), sizes


def build(turns) -> tuple:
    experiment = make_experiment(owner=make_user())
    for fields in turns:
        speaker = fields["visibility"][0] if fields["visibility"] else "DM"
        kind = "narrative" if speaker == "DM" and fields["visibility"] is None else "whisper"
        if fields["visibility"] == ["DM"]:
            kind = "gm_note"
        make_turn(experiment, speaker=speaker, kind=kind, **fields)
    return experiment, list(Turn.objects.filter(experiment=experiment).order_by("seq"))


def snapshot(experiment) -> tuple:
    seqs = dict(Turn.objects.filter(experiment=experiment).values_list("pk", "seq"))
    stats = sorted(
        (
            s.audience_key,
            s.key,
            s.term,
            s.kind,
            s.category,
            s.mentions,
            s.turns,
            s.mid,
            s.named,
            s.first_seq,
            tuple(seqs[i] for i in s.source_turn_ids),
        )
        for s in VocabularyStat.objects.filter(experiment=experiment)
    )
    entries = sorted(
        (
            e.audience_key,
            e.key,
            e.term,
            e.category,
            e.definition,
            e.mention_count,
            e.first_seen_round,
            e.last_seen_round,
            e.invalid_from_round,
            tuple(sorted(seqs[t.pk] for t in e.source_turns.all())),
        )
        for e in LoreEntry.objects.filter(experiment=experiment)
    )
    return stats, entries


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(logs())
def test_incremental_statistics_and_entries_equal_a_full_recount(log):
    turns, order, sizes = log
    whole, _ = build(turns)
    hydrate_experiment(experiment=whole)

    by_turn, rows = build(turns)
    for index in order[: len(order) // 2]:  # turn tasks, out of order
        hydrate_turn(turn=rows[index])
    for size in sizes:  # then batches of any size
        hydrate_batch(experiment=by_turn, limit=size)
    hydrate_experiment(experiment=by_turn)

    assert snapshot(by_turn) == snapshot(whole)
    assert snapshot(whole)[0], "the log always holds some candidate"
