"""The rough edges a first-time DM hit (issue 24, "hit on the way"), one behaviour each."""

import pytest
from django.urls import reverse

from campaigns.models import LoreEntry, LoreRevision
from campaigns.services.lore import lore_create
from tests.campaigns.api.conftest import client_for
from tests.campaigns.console.conftest import FORBIDDEN, HX
from tests.factories import make_turn

pytestmark = pytest.mark.django_db


def url(exp, name="console:lore", *args):
    return reverse(name, args=[exp.pk, *args])


def proposed(exp, term, **extra):
    return LoreEntry.objects.create(
        experiment=exp, term=term, key=term.lower(), definition=f"{term} def.", **extra
    )


# -- the World Bible -----------------------------------------------------------------------


def test_the_merge_selects_name_each_entry_with_its_audience_and_start_apart(as_user, owner, exp):
    first = proposed(exp, "Tide Codex")
    twin = proposed(exp, "Tide codex ", audience=None)
    body = as_user(owner).get(url(exp)).content.decode()
    merge = body.split("Merge two near-duplicates")[1]
    assert f"Tide Codex — everyone (proposed, id {first.pk})" in merge
    cassia_lore = LoreEntry.objects.get(experiment=exp, term=FORBIDDEN["cassia_lore"])
    assert f"Cassia, DM (confirmed, id {cassia_lore.pk})" in merge
    keep = merge.split('name="keep"')[1].split("</select>")[0]
    into = merge.split('name="merge"')[1].split("</select>")[0]
    assert f'value="{first.pk}" selected' in keep
    assert f'value="{twin.pk}" selected' in into


def test_merging_entries_of_different_audiences_offers_a_way_forward(as_user, owner, exp):
    public = proposed(exp, "Vane")
    secret = proposed(exp, "Vane ", audience=["Cassia", "DM"], audience_key="|Cassia|DM|")
    client = as_user(owner)
    response = client.post(
        url(exp, "console:lore_merge"),
        {"keep": public.pk, "merge": secret.pk, "tab": "proposed"},
        **HX,
    )
    assert response.status_code == 422
    body = response.content.decode()
    assert "different audiences" in body
    assert "can both stay" in body
    assert "Reject “Vane ” (Cassia, DM) instead" in body
    reject = client.post(
        url(exp, "console:lore_entry", secret.pk), {"action": "reject", "tab": "proposed"}, **HX
    )
    assert reject.status_code == 200
    secret.refresh_from_db()
    assert secret.status == "rejected"


def test_the_editor_forms_come_before_the_long_list(as_user, owner, exp):
    for n in range(30):
        proposed(exp, f"Term {n}")
    body = as_user(owner).get(url(exp)).content.decode()
    assert body.index("Merge two near-duplicates") < body.index('id="lore-list"')
    assert body.index("New entry") < body.index('id="lore-list"')


@pytest.mark.parametrize("locked", [False, True])
def test_an_empty_definition_is_refused_and_wipes_nothing(as_user, owner, exp, locked):
    entry = proposed(exp, "Hollow Bell", locked=locked)
    response = as_user(owner).post(
        url(exp, "console:lore_entry", entry.pk), {"action": "correct", "definition": "   "}, **HX
    )
    assert response.status_code == 422
    assert "A definition cannot be empty" in response.content.decode()
    entry.refresh_from_db()
    assert entry.definition == "Hollow Bell def."
    assert not LoreRevision.objects.filter(entry=entry).exists()


def test_the_api_refuses_an_empty_definition_too(owner, exp):
    entry = proposed(exp, "Hollow Bell")
    response = client_for(owner).patch(
        f"/api/experiments/{exp.pk}/lore/{entry.pk}/", {"definition": ""}, format="json"
    )
    assert response.status_code == 400 and "definition" in response.json()
    entry.refresh_from_db()
    assert entry.definition == "Hollow Bell def."


def test_confirm_in_the_proposed_tab_moves_the_entry_and_the_counts_in_place(as_user, owner, exp):
    entry = proposed(exp, "Brass Lung")
    proposed(exp, "Salt Ghost")
    response = as_user(owner).post(
        url(exp, "console:lore_entry", entry.pk),
        {"action": "confirm", "tab": "proposed", "q": "", "sort": "mentions"},
        **HX,
    )
    assert response.status_code == 200
    assert response["HX-Retarget"] == "#lore-editor"
    body = response.content.decode()
    listing = body.split('id="lore-list"')[1]
    assert f'id="lore-{entry.pk}"' not in listing and "Salt Ghost" in listing
    assert '<span class="count num" id="count-proposed">1</span>' in body
    confirmed = LoreEntry.objects.filter(
        experiment=exp, status="confirmed", invalid_from_round__isnull=True
    ).count()
    assert f'<span class="count num" id="count-confirmed">{confirmed}</span>' in body


def test_create_keeps_the_list_on_the_tab_being_read(as_user, owner, exp):
    proposed(exp, "Salt Ghost")
    response = as_user(owner).post(
        url(exp),
        {
            "term": "Quiet Ledger",
            "category": "artifact",
            "definition": "A blank ledger.",
            "tab": "proposed",
        },
        **HX,
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert "Created “Quiet Ledger” (confirmed)." in body
    assert "in “proposed”" in body and "Salt Ghost" in body.split('id="lore-list"')[1]


# -- the inspector -----------------------------------------------------------------------


def test_the_inspector_names_turns_by_speaker_round_and_first_words_and_lore_by_term(
    as_user, owner, exp
):
    make_turn(
        exp,
        speaker="Thorin",
        kind="action",
        round=1,
        content="Thorin hefts the ashfern tonic and drinks it slowly down",
    )
    body = as_user(owner).get(url(exp, "console:context", "Thorin")).content.decode()
    assert "Thorin, R1: “Thorin hefts the ashfern tonic and drinks it…”" in body
    assert f"lore “{LoreEntry.objects.get(experiment=exp, term__startswith='VIS').term}”" in body


def test_the_compare_view_names_items_too_each_as_its_own_role_reads_them(as_user, owner, exp):
    body = (
        as_user(owner)
        .get(url(exp, "console:context", "Thorin") + "?compare=Cassia")
        .content.decode()
    )
    compare = body.split('id="cmp-h"')[1]
    assert "Cassia, R1: “ZQX-cassia-monologue-doubt”" in compare
    assert "turn:" not in compare.split("</section>")[0]


def test_a_player_inspector_never_names_a_turn_they_cannot_read(as_user, player, exp):
    body = as_user(player).get(url(exp, "console:context", "Thorin")).content.decode()
    for marker in ("gm_note", "cassia_whisper", "cassia_monologue"):
        assert FORBIDDEN[marker] not in body


# -- what a player sees -------------------------------------------------------------------


def test_a_player_sees_no_gm_notes_tab_but_the_dm_side_does(as_user, owner, player, exp):
    notes = url(exp, "console:notes")
    assert (
        f'href="{notes}' not in as_user(player).get(url(exp, "console:campaign")).content.decode()
    )
    assert f'href="{notes}' in as_user(owner).get(url(exp, "console:campaign")).content.decode()


def test_a_player_sees_no_rejected_lore(as_user, owner, player, exp):
    entry = lore_create(
        experiment=exp,
        user=owner,
        term="Drowned Key",
        category="artifact",
        definition="A key.",
        audience=None,
    )
    LoreEntry.objects.filter(pk=entry.pk).update(status="rejected")
    client = as_user(player)
    page = client.get(url(exp)).content.decode()
    assert "?tab=rejected" not in page
    assert "Drowned Key" not in client.get(url(exp) + "?tab=rejected").content.decode()
    assert "Drowned Key" in as_user(owner).get(url(exp) + "?tab=rejected").content.decode()


def test_a_player_is_not_offered_themself_as_a_whisper_recipient(as_user, player, exp):
    body = as_user(player).get(url(exp, "console:whispers")).content.decode()
    new_whisper = body.split("Start a whisper")[1].split("</form>")[0]
    assert 'value="Thorin"' not in new_whisper
    assert 'value="DM"' in new_whisper


def test_a_players_action_hides_whisper_to(as_user, player, exp):
    body = as_user(player).get(url(exp, "console:campaign")).content.decode()
    composer = body.split('id="composer"')[1]
    assert '<option value="action" selected>' in composer or "action" in composer
    assert 'data-field="recipients" hidden' in composer
    response = as_user(player).post(
        url(exp, "console:turn_post"),
        {"kind": "whisper", "content": "", "recipients": ["DM"]},
        **HX,
    )
    assert 'data-field="recipients" hidden' not in response.content.decode()


# -- the rest of the list ------------------------------------------------------------------


def test_the_favicon_is_served_not_404(as_user, owner, client):
    response = client.get("/favicon.ico")
    assert response.status_code == 301
    assert client.get(response["Location"]).status_code == 200
    assert 'rel="icon"' in as_user(owner).get(reverse("console:dashboard")).content.decode()


def test_a_round_that_is_not_a_number_is_a_clear_400(as_user, owner, exp):
    response = as_user(owner).get(url(exp, "console:campaign") + "?round=abc")
    assert response.status_code == 400
    assert "Round “abc” is not a round number" in response.content.decode()
    assert as_user(owner).get(url(exp, "console:campaign") + "?round=").status_code == 200


def test_the_dashboard_shows_whispers_waiting_for_the_dm(as_user, owner, player, exp):
    # secrets_campaign: Cassia whispered, the DM answered, then Thorin whispered.
    client = as_user(owner)
    body = client.get(reverse("console:dashboard")).content.decode()
    assert "1 whisper waiting for the DM" in body
    make_turn(exp, speaker="Cassia", kind="whisper", content="Again?", visibility=["Cassia", "DM"])
    assert (
        "2 whispers waiting for the DM" in client.get(reverse("console:dashboard")).content.decode()
    )
    make_turn(exp, speaker="DM", kind="whisper", content="Yes.", visibility=["Cassia", "DM"])
    assert "waiting for the DM" not in client.get(reverse("console:dashboard")).content.decode()
    assert (
        "waiting for the DM"
        not in as_user(player).get(reverse("console:dashboard")).content.decode()
    )


def test_the_apis_experiment_has_current_round(owner, exp):
    exp.current_round = 4
    exp.save()
    body = client_for(owner).get(f"/api/experiments/{exp.pk}/").json()
    assert body["current_round"] == 4
