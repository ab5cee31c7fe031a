"""The World Bible hydrator and the definer: rules, audiences, locks, invalidation, races."""

from __future__ import annotations

import pytest

from campaigns.models import LoreEntry, LoreRevision
from campaigns.reads.selectors import lore_visible_to, viewer_for_role
from campaigns.services.experiments import experiment_update
from campaigns.services.lore import lore_create, lore_update
from campaigns.services.memory import define_term, hydrate_experiment, hydrate_turn
from campaigns.services.memory.batch.entries import _near, _transposed
from tests.campaigns.services.memory_support import use_gemini
from tests.factories import make_turn

pytestmark = pytest.mark.django_db


def hydrate(*turns):
    for turn in turns:
        hydrate_turn(turn=turn)


def entry(campaign, term, audience_key="*") -> LoreEntry:
    return LoreEntry.objects.get(experiment=campaign, term=term, audience_key=audience_key)


def lore_terms(campaign, role) -> set[str]:
    viewer = viewer_for_role(experiment=campaign, role=role)
    return set(lore_visible_to(experiment=campaign, viewer=viewer).values_list("term", flat=True))


def test_coined_terms_become_proposed_entries_with_their_first_use_sentence(campaign):
    first = make_turn(
        campaign,
        round=1,
        content=(
            "Thorin oils the hinge. The void-chisel hums in its case of ember-glass. "
            "Nobody else may touch the void-chisel."
        ),
    )
    hydrate(first)
    chisel = entry(campaign, "void-chisel")
    assert (chisel.status, chisel.origin, chisel.locked) == ("proposed", "extracted", False)
    assert chisel.definition == "The void-chisel hums in its case of ember-glass."
    assert list(chisel.source_turns.all()) == [first]
    assert (chisel.first_seen_round, chisel.last_seen_round, chisel.mention_count) == (1, 1, 1)
    assert chisel.audience is None and chisel.key == "void chisel"
    (revision,) = chisel.revisions.all()
    assert revision.actor == "task:hydrate" and revision.changes["status"] == [None, "proposed"]


def test_a_rare_lowercase_phrase_becomes_lore_once_it_recurs(campaign):
    one = make_turn(campaign, round=1, content="Wren drinks ashfern tonic and coughs.")
    hydrate(one)
    assert not LoreEntry.objects.filter(term="ashfern tonic").exists()
    two = make_turn(campaign, round=2, content="The ashfern tonic burns going down.")
    hydrate(two)
    tonic = entry(campaign, "ashfern tonic")
    assert set(tonic.source_turns.all()) == {one, two}
    assert (tonic.first_seen_round, tonic.last_seen_round, tonic.mention_count) == (1, 2, 2)
    assert tonic.definition == "Wren drinks ashfern tonic and coughs."


def test_later_mentions_update_counts_and_each_update_is_a_revision(campaign):
    turns = [
        make_turn(campaign, round=r, content=f"The Geometers measure pier {r}.") for r in (1, 2)
    ]
    turns.append(make_turn(campaign, round=4, content="A Geometer waves from the tower."))
    hydrate(*turns)
    (geometers,) = LoreEntry.objects.filter(key="geometer")
    assert geometers.term == "Geometers" and geometers.mention_count == 3
    assert (geometers.first_seen_round, geometers.last_seen_round) == (1, 4)
    changes = [r.changes for r in geometers.revisions.order_by("id")]
    # One mention is not enough: the entry is made at the second, with both as sources.
    assert len(changes) == 2 and changes[-1]["mention_count"] == [2, 3]


def test_near_duplicates_merge_into_one_entry(campaign):
    hydrate(
        make_turn(
            campaign,
            round=1,
            content="Archivist Maelis Orrow unlocks the stair. Ask Archivist Maelis Orrow.",
        ),
        make_turn(campaign, round=2, content="Nobody trusts Maelis any more."),
        make_turn(campaign, round=3, content="They follow the Geometers. Geometer boots ring."),
    )
    maelis = LoreEntry.objects.filter(key__contains="maelis")
    assert [e.term for e in maelis] == ["Archivist Maelis Orrow"]
    assert maelis[0].mention_count == 2
    assert LoreEntry.objects.filter(key="geometer").count() == 1


def test_rerunning_the_hydrator_adds_nothing(campaign):
    turns = [
        make_turn(campaign, round=1, content="The KESTREL sails with brinewick oil."),
        make_turn(campaign, round=2, content="Brinewick oil burns blue; the KESTREL burns too."),
    ]
    hydrate(*turns)
    counts = (LoreEntry.objects.count(), LoreRevision.objects.count())
    hydrate(*turns)
    assert hydrate_experiment(experiment=campaign) == {
        "created": [],
        "updated": [],
        "invalidated": [],
    }
    assert (LoreEntry.objects.count(), LoreRevision.objects.count()) == counts


def test_a_lock_survives_later_hydration(campaign, owner):
    hydrate(
        make_turn(
            campaign, round=1, content="The lantern-moss glows green. Do not eat lantern-moss."
        )
    )
    moss = entry(campaign, "lantern-moss")
    lore_update(entry=moss, user=owner, definition="A glowing cave moss.", locked=True)
    revisions = moss.revisions.count()
    hydrate(
        make_turn(campaign, round=5, content="The lantern-moss dims."),
        make_turn(
            campaign, round=6, content="Wren sells lantern-moss.", tags=["dead:lantern-moss"]
        ),
    )
    moss.refresh_from_db()
    assert (moss.definition, moss.mention_count, moss.last_seen_round) == (
        "A glowing cave moss.",
        1,
        1,
    )
    assert moss.invalid_from_round is None and moss.source_turns.count() == 1
    assert moss.revisions.count() == revisions


def test_dm_made_and_rejected_entries_are_never_touched_or_re_proposed(campaign, owner):
    lore_create(
        experiment=campaign,
        user=owner,
        term="Hollow Bell",
        category="artifact",
        definition="Rung when the tide turns early.",
        audience=None,
    )
    hydrate(
        make_turn(
            campaign, round=1, content="Wren hears the ember-glass crack. Old ember-glass breaks."
        )
    )
    lore_update(entry=entry(campaign, "ember-glass"), user=owner, status="rejected")
    hydrate(
        make_turn(campaign, round=2, content="The Hollow Bell rings; ember-glass sings."),
        make_turn(
            campaign,
            round=2,
            speaker="Thorin",
            kind="whisper",
            content="Thorin, to the DM: I pocket a shard of ember-glass.",
            visibility=["Thorin", "DM"],
        ),
    )
    bell = entry(campaign, "Hollow Bell")
    assert (bell.definition, bell.mention_count) == ("Rung when the tide turns early.", 0)
    assert not bell.revisions.filter(actor__startswith="task:").exists()
    glass = LoreEntry.objects.filter(key="ember glass")
    assert [(e.status, e.audience_key, e.mention_count) for e in glass] == [("rejected", "*", 1)]


def test_an_entry_from_a_whisper_reaches_only_the_whisper_audience(campaign):
    whisper = make_turn(
        campaign,
        round=1,
        speaker="Thorin",
        kind="whisper",
        content="Thorin, to the DM: I hide the Quillstone under the pier. Hide the Quillstone.",
        visibility=["Thorin", "DM"],
    )
    hydrate(whisper)
    secret = entry(campaign, "Quillstone", "|DM|Thorin|")
    assert secret.audience == ["DM", "Thorin"]
    assert "Quillstone" in lore_terms(campaign, "Thorin") and "Quillstone" in lore_terms(
        campaign, "DM"
    )
    assert "Quillstone" not in lore_terms(campaign, "Cassia")

    public = make_turn(
        campaign,
        round=3,
        content="A Quillstone glitters in the market. Thieves want the Quillstone.",
    )
    hydrate(public)
    shared = entry(campaign, "Quillstone")
    assert shared.definition == "A Quillstone glitters in the market."
    assert list(shared.source_turns.all()) == [public]  # never the whisper
    assert "pier" not in shared.definition


def test_a_definition_never_uses_a_gm_note_for_a_public_entry(campaign):
    hydrate(
        make_turn(
            campaign,
            round=1,
            kind="gm_note",
            content="The Ashen Prior is the Archivist's brother. Trust the Ashen Prior.",
            visibility=["DM"],
        )
    )
    assert entry(campaign, "Ashen Prior", "|DM|").definition.endswith("brother.")
    public = make_turn(
        campaign,
        round=2,
        content="Pilgrims pray to the Ashen Prior. Bells ring for the Ashen Prior.",
    )
    hydrate(public)
    prior = entry(campaign, "Ashen Prior")
    assert prior.definition == "Pilgrims pray to the Ashen Prior."
    assert [t.pk for t in prior.source_turns.all()] == [public.pk]
    assert "Ashen Prior" in lore_terms(campaign, "Cassia")
    # The DM keeps its own entry, still defined from the note.
    assert entry(campaign, "Ashen Prior", "|DM|").definition.endswith("brother.")


def test_a_broader_entry_absorbs_a_later_private_mention(campaign):
    hydrate(
        make_turn(
            campaign, round=1, content="The Gullwardens patrol the docks. Fear the Gullwardens."
        )
    )
    hydrate(
        make_turn(
            campaign,
            round=2,
            speaker="Cassia",
            kind="whisper",
            content="Cassia, to the DM: I bribe the Gullwardens.",
            visibility=["Cassia", "DM"],
        )
    )
    assert list(LoreEntry.objects.values_list("audience_key", flat=True)) == ["*"]
    assert entry(campaign, "Gullwardens").mention_count == 1  # the whisper is not a source


def test_monologues_are_never_lore_sources(campaign):
    thought = make_turn(
        campaign,
        round=1,
        speaker="Cassia",
        kind="monologue",
        content="The Quiet Ledger pays me in ember-glass.",
    )
    hydrate(thought)
    hydrate_experiment(experiment=campaign)
    assert not LoreEntry.objects.exists()


def test_a_fact_that_stops_being_true_is_invalidated_not_deleted(campaign):
    hydrate(
        make_turn(
            campaign,
            round=1,
            content="Captain Idris Vane commands the harbour. Hail Captain Idris Vane!",
        )
    )
    killed = make_turn(
        campaign, round=7, content="Vane falls from the mast.", tags=["dead:Idris Vane"]
    )
    hydrate(killed)
    vane = entry(campaign, "Captain Idris Vane")
    assert vane.invalid_from_round == 7
    revision = vane.revisions.order_by("-id").first()
    assert revision.changes["invalid_from_round"] == [None, 7]
    hydrate(killed)
    assert vane.revisions.count() == LoreEntry.objects.get(pk=vane.pk).revisions.count()


def test_a_private_turn_cannot_invalidate_what_others_read(campaign):
    hydrate(
        make_turn(
            campaign,
            round=1,
            content="Captain Idris Vane commands the harbour. Hail Captain Idris Vane!",
        )
    )
    hydrate(
        make_turn(
            campaign,
            round=3,
            kind="gm_note",
            content="Vane is poisoned and will die tonight.",
            visibility=["DM"],
            tags=["dead:Idris Vane"],
        )
    )
    assert entry(campaign, "Captain Idris Vane").invalid_from_round is None


# -- definitions by the model ------------------------------------------------------------


@pytest.fixture
def gemini(settings, gemini_standin):
    use_gemini(settings, gemini_standin)
    return gemini_standin


def test_with_a_model_the_definition_comes_from_it_after_commit(
    campaign, gemini, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        make_turn(
            campaign,
            round=1,
            content="The void-wraiths hum in their jars. Sailors fear void-wraiths.",
        )
    ghosts = entry(campaign, "void-wraiths")
    assert ghosts.definition == "A coined term defined by the model (stand-in)."
    define = ghosts.revisions.get(actor="task:define")
    assert define.changes["definition"][0] == "The void-wraiths hum in their jars."
    asked = [r for r in gemini.requests if "void-wraiths" in r.prompt and "Term:" in r.prompt]
    assert len(asked) == 1
    asked_before = len(gemini.requests)
    assert define_term(entry=ghosts) is None  # a rerun adds nothing, and asks nothing
    assert len(gemini.requests) == asked_before
    assert ghosts.revisions.count() == 2


def test_the_model_is_shown_only_sentences_the_entry_audience_may_read(campaign, gemini):
    make_turn(
        campaign,
        round=1,
        kind="gm_note",
        content="The Tide Codex answers to whoever names it.",
        visibility=["DM"],
    )
    public = make_turn(
        campaign, round=2, content="The Tide Codex rests on a plinth. Guards watch the Tide Codex."
    )
    hydrate_turn(turn=public)
    codex = entry(campaign, "Tide Codex")
    gemini.reset()
    assert define_term(entry=codex) == "A coined term defined by the model (stand-in)."
    (request,) = gemini.requests
    assert "rests on a plinth" in request.prompt
    assert "answers to whoever names it" not in request.prompt


def test_a_dm_correction_made_before_the_model_answers_wins(campaign, owner, gemini):
    hydrate(
        make_turn(campaign, round=1, content="The stilt-houses sway. Gulls nest on stilt-houses.")
    )
    houses = entry(campaign, "stilt-houses")
    lore_update(entry=houses, user=owner, definition="Homes on poles above the tide.")
    assert define_term(entry=houses) is None
    houses.refresh_from_db()
    assert houses.definition == "Homes on poles above the tide."
    assert not gemini.requests


def test_when_the_model_fails_the_first_use_sentence_stays(campaign, gemini):
    gemini.set_default("500")
    hydrate(
        make_turn(
            campaign, round=1, content="A void-chisel splits the seam. The void-chisel cools."
        )
    )
    chisel = entry(campaign, "void-chisel")
    assert define_term(entry=chisel) is None
    chisel.refresh_from_db()
    assert chisel.definition == "A void-chisel splits the seam."
    assert not chisel.revisions.filter(actor="task:define").exists()
    assert gemini.requests


def test_the_definer_model_follows_the_experiment_config(campaign, gemini):
    experiment_update(experiment=campaign, config={"definer_model": "offline"})
    hydrate(make_turn(campaign, round=1, content="The ember-glass rings. Cold ember-glass cracks."))
    assert define_term(entry=entry(campaign, "ember-glass")) is None
    assert not gemini.requests


def test_a_shouted_run_of_capitalised_words_longer_than_a_term_is_skipped(campaign):
    shout = " ".join(["Very Long Shouted Words"] * 20)  # 480 characters, one "name"
    hydrate(
        make_turn(campaign, round=1, content=f"{shout}. The Mirrorgate opens."),
        make_turn(campaign, round=1, content=f"{shout}. Beyond the Mirrorgate, fog."),
    )
    assert list(LoreEntry.objects.values_list("term", flat=True)) == ["Mirrorgate"]


def test_a_long_turn_replayed_word_for_word_is_not_a_second_use(campaign):
    # Within one hydration batch (an import's /checkpoint); turn-by-turn hydration does
    # not look back for replays, to stay O(that turn).
    recap = (
        "Long ago the glasswright Corviel Anst sealed the vault beneath the orchard, and "
        "ever since the villagers of the valley have left a lantern burning at its door "
        "on the longest night, hoping the warden inside remembers their names and stays."
    )
    make_turn(campaign, round=1, content=recap)
    make_turn(campaign, round=9, content=recap + " (played again)")
    hydrate_experiment(experiment=campaign)
    assert not LoreEntry.objects.filter(key="glasswright").exists()
    later = make_turn(campaign, round=10, content="Nobody trusts a glasswright after dark.")
    hydrate(later)
    assert LoreEntry.objects.filter(key="glasswright").exists()


def test_a_transposed_spelling_merges_but_a_different_name_does_not():
    assert _transposed("greymantle", "gerymantle")  # "Greypsine" for "Greyspine"
    assert _transposed("marrowind", "marrowidn")
    assert not _transposed("greymantle", "rgeymantle")  # the first letter is kept
    assert not _transposed("corlavin", "corlivan")  # not two adjacent letters swapped
    assert not _transposed("ashby", "ahsby")  # too short to be sure


def test_a_family_and_its_manor_stay_two_entries():
    assert not _near("ostrander manor", "ostrander")
    assert _near("house ostrander", "ostrander")
