import pytest
from django.urls import reverse

from campaigns.models import LoreEntry, Summary, Turn, TurnRevision
from tests.campaigns.console.conftest import FORBIDDEN, HX, is_fragment
from tests.campaigns.console.matrix import READ, check_get
from tests.factories import make_turn

pytestmark = pytest.mark.django_db


def url(exp, name="console:notes", *args):
    return reverse(name, args=[exp.pk, *args])


def gm_note(exp):
    return Turn.objects.get(experiment=exp, kind="gm_note")


@pytest.mark.parametrize("persona", READ)
def test_the_notes_page_over_the_permission_matrix(as_user, personas, exp, persona):
    check_get(as_user(personas[persona]), url(exp), READ[persona], marker='id="notes"')


def test_a_player_sees_no_dm_note(as_user, player, exp):
    body = as_user(player).get(url(exp)).content.decode()
    assert FORBIDDEN["gm_note"] not in body
    assert "Add note" not in body


def test_the_dm_creates_a_note_in_place(as_user, owner, exp):
    response = as_user(owner).post(url(exp), {"content": "The well is a lie.", "round": 2}, **HX)
    assert response.status_code == 200 and is_fragment(response)
    note = Turn.objects.get(content="The well is a lie.")
    assert (note.kind, note.visibility, note.round, note.speaker) == ("gm_note", ["DM"], 2, "DM")


def test_an_empty_note_re_renders_with_the_error(as_user, owner, exp):
    before = Turn.objects.count()
    response = as_user(owner).post(url(exp), {"content": "  ", "round": "x"}, **HX)
    assert response.status_code == 422
    body = response.content.decode()
    assert "This field is required" in body and "Enter a whole number" in body
    assert Turn.objects.count() == before


def test_edit_keeps_the_old_text_as_a_revision_and_answers_one_note(as_user, owner, exp):
    note = gm_note(exp)
    client = as_user(owner)
    form = client.get(url(exp, "console:note_edit", note.pk), **HX)
    assert is_fragment(form) and "<textarea" in form.content.decode()
    response = client.post(url(exp, "console:note", note.pk), {"content": "Trapdoor moved."}, **HX)
    assert response.status_code == 200 and is_fragment(response)
    assert f'id="note-{note.pk}"' in response.content.decode()
    note.refresh_from_db()
    assert note.content == "Trapdoor moved."
    revision = TurnRevision.objects.get(turn=note)
    assert (revision.action, revision.old_content) == ("edit", FORBIDDEN["gm_note"])


def test_an_empty_edit_changes_nothing(as_user, owner, exp):
    note = gm_note(exp)
    response = as_user(owner).post(url(exp, "console:note", note.pk), {"content": ""}, **HX)
    assert response.status_code == 422 and "This field is required" in response.content.decode()
    note.refresh_from_db()
    assert note.content == FORBIDDEN["gm_note"]
    assert not TurnRevision.objects.exists()


def test_delete_removes_the_note_but_keeps_its_snapshot(as_user, owner, exp):
    note = gm_note(exp)
    response = as_user(owner).post(url(exp, "console:note_delete", note.pk), **HX)
    assert response.status_code == 200 and "deleted" in response.content.decode()
    assert not Turn.objects.filter(pk=note.pk).exists()
    revision = TurnRevision.objects.get(experiment=exp)
    assert (revision.action, revision.old_content, revision.seq) == (
        "delete",
        FORBIDDEN["gm_note"],
        note.seq,
    )


def test_editing_a_note_rewinds_the_digests_that_folded_it(as_user, owner, exp):
    note = gm_note(exp)
    digest = Summary.objects.get(experiment=exp, audience=["DM"])
    digest.source_turn_ids = [note.pk]
    digest.save()
    as_user(owner).post(url(exp, "console:note", note.pk), {"content": "Rewritten."})
    latest = Summary.objects.filter(experiment=exp, audience_key=digest.audience_key).latest(
        "version"
    )
    assert latest.version == digest.version + 1
    assert FORBIDDEN["dm_digest"] not in latest.text
    assert latest.covered_seq == 0


def test_deleting_a_note_rejects_lore_sourced_only_from_it(as_user, owner, exp):
    note = gm_note(exp)
    other = make_turn(exp, content="Public mention.")
    lonely = LoreEntry.objects.create(
        experiment=exp, term="Trapdoor", key="trapdoor", audience=["DM"], audience_key="|DM|"
    )
    lonely.source_turns.add(note)
    shared = LoreEntry.objects.create(
        experiment=exp, term="Well", key="well", audience=["DM"], audience_key="|DM|"
    )
    shared.source_turns.add(note, other)
    locked = LoreEntry.objects.create(
        experiment=exp, term="Key", key="key", audience=["DM"], audience_key="|DM|", locked=True
    )
    locked.source_turns.add(note)
    as_user(owner).post(url(exp, "console:note_delete", note.pk))
    lonely.refresh_from_db(), shared.refresh_from_db(), locked.refresh_from_db()
    assert lonely.status == "rejected" and lonely.revisions.exists()
    assert shared.status == "proposed" and list(shared.source_turns.all()) == [other]
    assert locked.status == "proposed"


@pytest.mark.parametrize("persona,status", [("player", 403), ("stranger", 404), ("anonymous", 302)])
def test_non_dms_write_no_note(as_user, personas, exp, persona, status):
    note = gm_note(exp)
    client = as_user(personas[persona])
    count = Turn.objects.count()
    assert client.post(url(exp), {"content": "x"}).status_code == status
    assert client.post(url(exp, "console:note", note.pk), {"content": "x"}).status_code == status
    assert client.post(url(exp, "console:note_delete", note.pk)).status_code == status
    assert client.get(url(exp, "console:note_edit", note.pk)).status_code == status
    note.refresh_from_db()
    assert note.content == FORBIDDEN["gm_note"] and Turn.objects.count() == count
    assert not TurnRevision.objects.exists()


def test_a_note_id_that_is_not_a_note_is_404(as_user, owner, exp):
    public = Turn.objects.filter(experiment=exp, kind="narrative").first()
    client = as_user(owner)
    assert client.post(url(exp, "console:note_delete", public.pk)).status_code == 404
    assert client.get(url(exp, "console:note", "junk")).status_code == 404
    assert Turn.objects.filter(pk=public.pk).exists()


def test_a_deleted_notes_snapshot_is_readable_in_the_admin(as_user, staff_user, owner, exp):
    note = gm_note(exp)
    as_user(owner).post(url(exp, "console:note_delete", note.pk))
    body = as_user(staff_user).get("/admin/campaigns/turnrevision/").content.decode()
    assert "Deleted" in body
    revision = TurnRevision.objects.get()
    detail = as_user(staff_user).get(f"/admin/campaigns/turnrevision/{revision.pk}/change/")
    assert FORBIDDEN["gm_note"] in detail.content.decode()
