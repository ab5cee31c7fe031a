"""Building a role's pack from the database: constant queries, budgets, no leaks."""

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from campaigns import bench
from campaigns.models import Experiment
from campaigns.reads import selectors
from campaigns.services.context import pack_for_role
from context_engine.render import pack_to_json
from tests.factories import make_experiment, make_turn

pytestmark = pytest.mark.django_db

INPUT = "Where did we leave the brinewick oil?"


def _queries(experiment, role, input_text=INPUT) -> int:
    return len(_statements(experiment, role, input_text))


def _statements(experiment, role, input_text=INPUT) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        pack_for_role(experiment=experiment, role=role, input_text=input_text)
    return [query["sql"] for query in captured.captured_queries]


def _hit_reads(statements: list[str]) -> int:
    return sum("hits AS MATERIALIZED" in sql or "is_hit" in sql for sql in statements)


def test_one_pack_takes_the_same_number_of_queries_at_100_and_5000_turns():
    """The same statements at both sizes, at most 13 (11 + the cache read + the best
    hits' wider exchange); but the hits' rows, which are not read when the window holds
    every hit with its neighbours (`hit_cache.window_hit_rows`): at 100 turns it may
    hold the whole history. At 5,000 the hits are read twice: the two best with three
    turns a side, the others with one (`retrieval.Preset.neighbours_of`)."""
    small = bench.create_campaign(100)
    large = bench.create_campaign(5000)
    for role in bench.ROLES:
        at_small, at_large = _statements(small, role), _statements(large, role)
        assert len(at_small) - _hit_reads(at_small) == len(at_large) - _hit_reads(at_large)
        assert _hit_reads(at_small) <= _hit_reads(at_large) == 2
        assert len(at_large) <= 13


def test_the_query_count_does_not_depend_on_the_strategy_window_rules():
    for strategy in ("sliding_window", "triage", "structured_state", "tiered"):
        small = bench.create_campaign(100, seed=3)
        large = bench.create_campaign(3000, seed=3)
        Experiment.objects.filter(pk__in=[small.pk, large.pk]).update(config={"strategy": strategy})
        assert _queries(small, "Thorin") == _queries(large, "Thorin") <= 13, strategy


@pytest.fixture
def forty_rounds(owner):
    """A 40-round campaign with whispers, GM notes and monologues every round."""
    experiment = make_experiment(owner=owner, roles=("DM", "Thorin", "Cassia", "Wren"))
    for round_ in range(1, 41):
        make_turn(experiment, round=round_, content=f"Round {round_}: the tide turns again. " * 6)
        make_turn(
            experiment, round=round_, kind="choice", content=f"Choice {round_}: fight or flee?"
        )
        for player in ("Thorin", "Cassia", "Wren"):
            make_turn(
                experiment,
                round=round_,
                speaker=player,
                kind="action",
                content=f"{player} acts in round {round_}. " * 4,
            )
            make_turn(
                experiment,
                round=round_,
                speaker=player,
                kind="whisper",
                content=f"whisper-{player}-{round_} for the DM only",
            )
            make_turn(
                experiment,
                round=round_,
                speaker=player,
                kind="monologue",
                content=f"monologue-{player}-{round_}",
            )
        make_turn(experiment, round=round_, kind="gm_note", content=f"gmnote-{round_}")
    return experiment


def test_every_role_gets_a_pack_within_budget_and_repeated_builds_are_identical(forty_rounds):
    for role in ("DM", "Thorin", "Cassia", "Wren"):
        first = pack_for_role(experiment=forty_rounds, role=role, input_text="fight")
        second = pack_for_role(experiment=forty_rounds, role=role, input_text="fight")
        assert first.total_tokens <= first.budget == 13000
        assert pack_to_json(first) == pack_to_json(second)


def test_a_players_pack_never_holds_another_players_whisper_or_monologue_or_gm_notes(forty_rounds):
    pack = pack_for_role(experiment=forty_rounds, role="Thorin", input_text="whisper monologue")
    text = "\n".join(section.text for section in pack.sections)
    assert "whisper-Thorin-40" in text
    assert "monologue-Thorin-40" in text
    for marker in (
        "whisper-Cassia",
        "whisper-Wren",
        "monologue-Cassia",
        "monologue-Wren",
        "gmnote-",
    ):
        assert marker not in text


def test_the_dm_reads_gm_notes_and_whispers_but_not_monologues(forty_rounds):
    pack = pack_for_role(experiment=forty_rounds, role="DM")
    text = "\n".join(section.text for section in pack.sections)
    assert "gmnote-40" in text and "whisper-Cassia-40" in text
    assert "monologue-" not in text


def test_retrieval_recovers_a_round_two_item_at_round_thirteen():
    call_command("seed_demo", "--no-logins")
    experiment = Experiment.objects.get()
    pack = pack_for_role(experiment=experiment, role="Thorin", input_text=INPUT)
    retrieval = next(section for section in pack.sections if section.name == "retrieval")
    assert "brinewick oil from a Geometer lamp" in retrieval.text


def test_no_player_pack_of_the_demo_holds_secrets_it_should_not():
    call_command("seed_demo", "--no-logins")
    experiment = Experiment.objects.get()
    texts = {
        role: "\n".join(s.text for s in pack_for_role(experiment=experiment, role=role).sections)
        for role in ("Thorin", "Cassia", "Wren")
    }
    assert "Quiet Ledger. Steal the Tide Codex" in texts["Cassia"]
    for role in ("Thorin", "Wren"):
        assert "Steal the Tide Codex" not in texts[role]
        assert "sold the door's location" not in texts[role]  # a GM note
    assert "three taps" not in texts["Thorin"].lower()  # Wren's whisper and monologue


def test_an_unknown_role_is_reported_by_name(campaign):
    with pytest.raises(selectors.UnknownRole, match="Gandalf"):
        pack_for_role(experiment=campaign, role="Gandalf")


@pytest.mark.parametrize(
    "strategy",
    ["sliding_window", "rolling_summary", "structured_state", "layered", "triage", "tiered"],
)
@pytest.mark.parametrize("show_whisper_existence", [False, True])
def test_what_the_loader_fetches_builds_the_same_pack_as_the_whole_history(
    forty_rounds, strategy, show_whisper_existence
):
    from dataclasses import replace

    from campaigns.models import Turn
    from campaigns.reads import adapters
    from campaigns.services.context import pack_input_for_role
    from context_engine.pack import build_pack

    forty_rounds.config = {
        "strategy": strategy,
        "window_turns": 5,
        "show_whisper_existence": show_whisper_existence,
    }
    forty_rounds.save()
    everything = adapters.turn_views(Turn.objects.filter(experiment=forty_rounds).order_by("seq"))
    for role in ("DM", "Thorin", "Wren"):
        loaded = pack_input_for_role(experiment=forty_rounds, role=role, input_text="tide")
        whole = replace(loaded, turns=everything)
        assert pack_to_json(build_pack(loaded)) == pack_to_json(build_pack(whole)), role


def test_a_restored_digest_version_is_the_one_in_the_next_pack(campaign, owner):
    from campaigns.models import Summary
    from campaigns.services.memory import summary_restore

    for round_ in range(1, 9):
        make_turn(campaign, round=round_, content=f"Round {round_} passes by the harbour.")

    def digest(version, covered, text, previous=None):
        return Summary.objects.create(
            experiment=campaign,
            kind="digest",
            audience=["Thorin"],
            audience_key="|Thorin|",
            round_from=0,
            round_to=covered,
            covered_seq=covered,
            text=text,
            version=version,
            previous=previous,
        )

    first = digest(1, 2, "FIRST DIGEST TEXT")
    digest(2, 4, "SECOND DIGEST TEXT", previous=first)

    def digest_text():
        pack = pack_for_role(experiment=campaign, role="Thorin")
        return next(s.text for s in pack.sections if s.name == "digest")

    assert "SECOND DIGEST TEXT" in digest_text()
    summary_restore(summary=first, user=owner)
    assert "FIRST DIGEST TEXT" in digest_text()
    assert "SECOND DIGEST TEXT" not in digest_text()


@pytest.mark.parametrize(
    "input_text",
    [
        "Where do I plan to slip away to?",
        "the lantern vault oath",
        "salt",
        "When was Cassia at the salt marsh?",  # a named speaker's turns rank higher
    ],
)
def test_the_loader_ranks_monologues_as_the_in_memory_replay_does(owner, input_text):
    """The loader's hits and neighbours (full-text postings, SQL) are exactly what
    `search_memory` ranks over the role's readable turns (the Arena's replay): a player's
    own monologues rank in both, another's in neither, a judge's every one in both."""
    from campaigns.reads import adapters
    from campaigns.services.context import pack_input_for_role
    from campaigns.services.experiments import participant_create
    from context_engine.retrieval import query_for, search_memory

    experiment = make_experiment(owner=owner, roles=("DM", "Thorin", "Cassia"))
    participant_create(experiment=experiment, role="Oracle", kind="judge")
    places = ["lantern vault", "salt marsh", "oath stone", "ember gate"]
    for round_ in range(1, 31):
        place = places[round_ % len(places)]
        make_turn(experiment, round=round_, content=f"Round {round_}: rain on the {place}.")
        make_turn(experiment, round=round_, speaker="Thorin", kind="action", content="I wait.")
        make_turn(
            experiment, round=round_, speaker="Cassia", kind="action",
            content=f"I mark the {place} on my map.",
        )  # fmt: skip
        for player in ("Thorin", "Cassia"):
            make_turn(
                experiment, round=round_, speaker=player, kind="monologue",
                content=f"I will slip away to the {place} when the moon is dark.",
                visibility=[player],
            )  # fmt: skip
        make_turn(experiment, round=round_, kind="gm_note", content=f"The {place} hides salt.")
    Experiment.objects.filter(pk=experiment.pk).update(current_round=30)
    for role in ("DM", "Thorin", "Cassia", "Oracle"):
        loaded = pack_input_for_role(experiment=experiment, role=role, input_text=input_text)
        viewer = selectors.viewer_for_role(experiment=experiment, role=role)
        readable = adapters.turn_views(
            selectors.turns_visible_to(experiment=experiment, viewer=viewer).order_by("seq")
        )
        query = query_for(input_text, [t for t in loaded.turns if t.content], loaded.participants)
        hits, around = search_memory(
            query, readable, loaded.config.retrieval_preset, omniscient=viewer.omniscient
        )
        assert [t.id for t in loaded.retrieval_turns] == [t.id for t in hits], role
        assert sorted(t.id for t in loaded.retrieval_context) == sorted(
            t.id for t in around if t.id not in {h.id for h in hits}
        ), role
        speakers = {t.speaker for t in hits if t.kind == "monologue"}
        if role in ("Thorin", "Cassia") and "slip" in input_text:
            assert speakers == {role}, role
        if role == "DM":
            assert not speakers
        if role == "Oracle" and "slip" in input_text:
            assert speakers == {"Thorin", "Cassia"}
        if not viewer.omniscient:
            assert all(t.kind != "monologue" for t in loaded.retrieval_context), role
        if "Cassia" in input_text:  # her own turns rank first, wherever the words are
            assert [t.speaker for t in hits[:3]] == ["Cassia"] * 3, role
