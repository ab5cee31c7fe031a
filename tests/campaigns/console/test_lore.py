import pytest
from django.urls import reverse

from campaigns.models import LoreEntry, LoreRevision
from tests.campaigns.console.conftest import ALLOWED, FORBIDDEN, HX, is_fragment
from tests.campaigns.console.matrix import READ, check_get

pytestmark = pytest.mark.django_db


def url(exp, name="console:lore", *args):
    return reverse(name, args=[exp.pk, *args])


def proposed(exp, term, **extra):
    key = term.lower()
    return LoreEntry.objects.create(
        experiment=exp, term=term, key=key, definition=f"{term} def.", **extra
    )


@pytest.mark.parametrize("persona", READ)
def test_the_world_bible_over_the_permission_matrix(as_user, personas, exp, persona):
    check_get(
        as_user(personas[persona]),
        url(exp) + "?tab=confirmed",
        READ[persona],
        marker="lore-entries",
    )


def test_tabs_search_and_sort(as_user, owner, exp):
    proposed(exp, "Alpha", mention_count=1)
    proposed(exp, "Beta", mention_count=9)
    client = as_user(owner)
    body = client.get(url(exp) + "?tab=proposed&sort=mentions", **HX).content.decode()
    assert body.index("Beta") < body.index("Alpha")
    assert ALLOWED["public_lore"] not in body  # confirmed, other tab
    body = client.get(url(exp) + "?tab=proposed&q=alp", **HX).content.decode()
    assert "Alpha" in body and "Beta" not in body


def test_a_player_reads_only_lore_of_their_audience(as_user, player, exp):
    body = as_user(player).get(url(exp) + "?tab=confirmed").content.decode()
    assert ALLOWED["public_lore"] in body
    assert FORBIDDEN["dm_lore"] not in body and FORBIDDEN["cassia_lore"] not in body
    assert "Save definition" not in body


def test_correct_then_lock_writes_revisions_and_answers_the_entry(
    as_user, owner, exp, secrets_campaign
):
    entry = secrets_campaign.lore["public_lore"]
    client = as_user(owner)
    response = client.post(
        url(exp, "console:lore_entry", entry.pk),
        {"action": "correct", "definition": "A drowned library."},
        **HX,
    )
    assert response.status_code == 200 and is_fragment(response)
    assert f'id="lore-{entry.pk}"' in response.content.decode()
    client.post(url(exp, "console:lore_entry", entry.pk), {"action": "lock"}, **HX)
    entry.refresh_from_db()
    assert (entry.definition, entry.locked) == ("A drowned library.", True)
    history = client.get(url(exp, "console:lore_history", entry.pk), **HX).content.decode()
    assert "<ins>A drowned library.</ins>" in history and "<del>" in history
    assert "locked" in history


def test_invalidate_needs_a_round_and_stores_nothing_without_one(
    as_user, owner, exp, secrets_campaign
):
    entry = secrets_campaign.lore["public_lore"]
    client = as_user(owner)
    bad = client.post(url(exp, "console:lore_entry", entry.pk), {"action": "invalidate"}, **HX)
    assert bad.status_code == 422 and "Give the round" in bad.content.decode()
    entry.refresh_from_db()
    assert entry.invalid_from_round is None
    client.post(
        url(exp, "console:lore_entry", entry.pk), {"action": "invalidate", "invalid_from_round": 3}
    )
    entry.refresh_from_db()
    assert entry.invalid_from_round == 3
    body = client.get(url(exp) + "?tab=invalidated", **HX).content.decode()
    assert ALLOWED["public_lore"] in body


def test_create_an_entry_and_a_duplicate_is_refused_naming_term(as_user, owner, exp):
    client = as_user(owner)
    data = {"term": "Salt Gate", "category": "location", "definition": "A gate."}
    assert client.post(url(exp), data, **HX).status_code == 200
    assert LoreEntry.objects.get(term="Salt Gate").status == "confirmed"
    again = client.post(url(exp), data, **HX)
    assert again.status_code == 422 and "already has" in again.content.decode()
    assert LoreEntry.objects.filter(term="Salt Gate").count() == 1


def test_bulk_confirm_and_an_empty_selection(as_user, owner, exp):
    a, b = proposed(exp, "Alpha"), proposed(exp, "Beta")
    client = as_user(owner)
    response = client.post(
        url(exp, "console:lore_bulk"), {"action": "confirm", "ids": [a.pk, b.pk]}, **HX
    )
    assert response.status_code == 200
    assert set(LoreEntry.objects.filter(pk__in=[a.pk, b.pk]).values_list("status", flat=True)) == {
        "confirmed"
    }
    empty = client.post(url(exp, "console:lore_bulk"), {"action": "reject"}, **HX)
    assert empty.status_code == 422 and "This field is required" in empty.content.decode()


def test_bulk_cannot_touch_entries_outside_the_campaign(as_user, owner, exp):
    from tests.factories import make_experiment

    foreign = proposed(make_experiment(), "Foreign")
    response = as_user(owner).post(
        url(exp, "console:lore_bulk"), {"action": "reject", "ids": [foreign.pk]}
    )
    assert response.status_code == 422
    foreign.refresh_from_db()
    assert foreign.status == "proposed"


def test_merge_two_near_duplicates(as_user, owner, exp):
    keep = proposed(exp, "Geometer", mention_count=2, last_seen_round=3)
    dup = proposed(exp, "Geometers", mention_count=5, last_seen_round=6)
    response = as_user(owner).post(
        url(exp, "console:lore_merge"), {"keep": keep.pk, "merge": dup.pk}, **HX
    )
    assert response.status_code == 200
    keep.refresh_from_db(), dup.refresh_from_db()
    assert (keep.mention_count, keep.last_seen_round, dup.status) == (7, 6, "rejected")
    assert LoreRevision.objects.filter(entry=dup).exists()


def test_merge_of_one_entry_with_itself_is_refused(as_user, owner, exp):
    keep = proposed(exp, "Geometer")
    response = as_user(owner).post(
        url(exp, "console:lore_merge"), {"keep": keep.pk, "merge": keep.pk}, **HX
    )
    assert response.status_code == 422 and "two different" in response.content.decode()
    assert not LoreRevision.objects.filter(entry=keep).exists()


@pytest.mark.parametrize("persona,status", [("player", 403), ("stranger", 404), ("anonymous", 302)])
def test_only_editors_change_the_world_bible(
    as_user, personas, exp, secrets_campaign, persona, status
):
    entry = secrets_campaign.lore["public_lore"]
    client = as_user(personas[persona])
    revisions = LoreRevision.objects.count()
    assert (
        client.post(url(exp, "console:lore_entry", entry.pk), {"action": "reject"}).status_code
        == status
    )
    assert client.post(url(exp), {"term": "X", "category": "term"}).status_code == status
    assert (
        client.post(
            url(exp, "console:lore_bulk"), {"action": "reject", "ids": [entry.pk]}
        ).status_code
        == status
    )
    assert (
        client.post(
            url(exp, "console:lore_merge"), {"keep": entry.pk, "merge": entry.pk}
        ).status_code
        == status
    )
    entry.refresh_from_db()
    assert entry.status == "confirmed" and LoreRevision.objects.count() == revisions
    assert not LoreEntry.objects.filter(term="X").exists()


def test_a_player_cannot_read_the_history_of_hidden_lore(as_user, player, exp, secrets_campaign):
    """A player knows entries by position among those they read: no number reaches the
    DM-only entry's history (its id is another entry's position, or nothing)."""
    hidden = secrets_campaign.lore["dm_lore"]
    readable = LoreEntry.objects.filter(experiment=exp).count()
    for number in {hidden.pk, *range(1, readable + 2)}:
        response = as_user(player).get(url(exp, "console:lore_history", number))
        assert response.status_code in (200, 404)
        assert hidden.term not in response.content.decode()
