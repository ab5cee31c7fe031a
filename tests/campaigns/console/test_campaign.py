import pytest
from django.urls import reverse

from campaigns.models import ContextEvent, Experiment, Job, Turn
from tests.campaigns.console.conftest import ALLOWED, FORBIDDEN, HX, is_fragment
from tests.campaigns.console.matrix import READ, check_get
from tests.factories import make_turn

pytestmark = pytest.mark.django_db


def url(exp, name="console:campaign", *args):
    return reverse(name, args=[exp.pk, *args])


@pytest.mark.parametrize("persona", READ)
def test_the_timeline_over_the_permission_matrix(as_user, personas, exp, persona):
    check_get(as_user(personas[persona]), url(exp), READ[persona], marker='id="timeline"')


def test_the_owner_reads_everything_and_view_as_narrows_to_that_role(as_user, owner, exp):
    client = as_user(owner)
    everything = client.get(url(exp)).content.decode()
    assert FORBIDDEN["gm_note"] in everything and FORBIDDEN["cassia_monologue"] in everything
    as_thorin = client.get(url(exp) + "?as=Thorin").content.decode()
    assert ALLOWED["thorin_whisper"] in as_thorin
    for marker in ("gm_note", "cassia_whisper", "cassia_monologue"):
        assert FORBIDDEN[marker] not in as_thorin
    assert "viewing as Thorin" in as_thorin


def test_view_as_an_unknown_role_is_404(as_user, owner, exp):
    assert as_user(owner).get(url(exp) + "?as=Nobody").status_code == 404


def test_a_player_cannot_widen_their_view_with_as(as_user, player, exp):
    body = as_user(player).get(url(exp) + "?as=DM").content.decode()
    assert FORBIDDEN["gm_note"] not in body
    assert ALLOWED["thorin_monologue"] in body


def test_filters_by_round_kind_and_speaker(as_user, owner, exp):
    make_turn(exp, round=5, content="ROUND-FIVE-ONLY")
    client = as_user(owner)
    body = client.get(url(exp) + "?round=5", **HX).content.decode()
    assert "ROUND-FIVE-ONLY" in body and ALLOWED["public"] not in body
    body = client.get(url(exp) + "?kind=monologue").content.decode()
    assert (
        FORBIDDEN["cassia_monologue"] in body
        and ALLOWED["public"] not in body.split('id="timeline"')[1]
    )
    body = client.get(url(exp) + "?speaker=Cassia", **HX).content.decode()
    assert FORBIDDEN["cassia_whisper"] in body and ALLOWED["thorin_whisper"] not in body


def test_load_earlier_pages_back_and_answers_only_the_older_rows(as_user, owner, exp):
    for i in range(60):
        make_turn(exp, content=f"FILLER-{i:02d}")
    client = as_user(owner)
    first = client.get(url(exp)).content.decode()
    assert "FILLER-59" in first and "Load earlier turns" in first
    assert ALLOWED["public"] not in first.split('id="timeline"')[1]
    oldest_shown = Turn.objects.filter(experiment=exp).order_by("-seq")[49].seq
    earlier = client.get(url(exp) + f"?before={oldest_shown}", **HX)
    assert is_fragment(earlier)
    text = earlier.content.decode()
    assert ALLOWED["public"] in text and "FILLER-59" not in text


def test_the_owner_posts_a_whisper_from_the_composer(as_user, owner, exp):
    response = as_user(owner).post(
        url(exp, "console:turn_post"),
        {"kind": "whisper", "content": "Psst", "recipients": ["Thorin"]},
        **HX,
    )
    assert response.status_code == 200
    assert "turns-changed" in response["HX-Trigger"]
    turn = Turn.objects.get(experiment=exp, content="Psst")
    assert (turn.speaker, turn.visibility) == ("DM", ["DM", "Thorin"])


def test_a_bad_composer_input_re_renders_with_the_error_and_stores_nothing(as_user, owner, exp):
    before = Turn.objects.count()
    response = as_user(owner).post(
        url(exp, "console:turn_post"), {"kind": "whisper", "content": "x"}, **HX
    )
    assert response.status_code == 422
    assert "Choose at least one recipient" in response.content.decode()
    assert is_fragment(response)
    plain = as_user(owner).post(url(exp, "console:turn_post"), {"kind": "narrative", "content": ""})
    assert plain.status_code == 422 and "This field is required" in plain.content.decode()
    assert Turn.objects.count() == before


def test_a_player_posts_only_as_themselves_and_only_player_kinds(as_user, player, exp):
    client = as_user(player)
    response = client.post(url(exp, "console:turn_post"), {"kind": "action", "content": "I dive."})
    assert response.status_code == 302
    assert Turn.objects.get(content="I dive.").speaker == "Thorin"
    before = Turn.objects.count()
    refused = client.post(url(exp, "console:turn_post"), {"kind": "gm_note", "content": "hack"})
    assert refused.status_code == 422
    assert Turn.objects.count() == before


@pytest.mark.parametrize("persona,status", [("stranger", 404), ("anonymous", 302)])
def test_outsiders_post_nothing(as_user, personas, exp, persona, status):
    before = Turn.objects.count()
    response = as_user(personas[persona]).post(
        url(exp, "console:turn_post"), {"kind": "narrative", "content": "hi"}
    )
    assert response.status_code == status
    assert Turn.objects.count() == before


def test_checkpoint_answers_a_progress_bar_that_polls_until_done(
    as_user, owner, exp, django_capture_on_commit_callbacks
):
    client = as_user(owner)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url(exp, "console:command_post"), {"command": "checkpoint"}, **HX)
    assert response.status_code == 200
    assert "<progress" in response.content.decode()
    job = Job.objects.filter(experiment=exp, kind="checkpoint").latest("created_at")
    assert f'hx-get="{url(exp, "console:job", job.pk)}"' in response.content.decode()
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED
    poll = client.get(url(exp, "console:job", job.pk), **HX)
    assert poll.status_code == 286
    assert "job-done" in poll["HX-Trigger"]


def test_the_progress_bar_carries_the_header_round_number_out_of_band(as_user, owner, exp):
    """A round moves the clock: each poll swaps the header's number (htmx oob); the full
    page renders it once, in the header."""
    job = Job.objects.create(experiment=exp, kind="round", status="running", progress=40)
    Experiment.objects.filter(pk=exp.pk).update(current_round=7)
    poll = as_user(owner).get(url(exp, "console:job", job.pk), **HX).content.decode()
    assert '<strong id="current-round" hx-swap-oob="true">7</strong>' in poll
    full = as_user(owner).get(url(exp)).content.decode()
    assert full.count('id="current-round"') == 1
    assert 'id="current-round">7<' in full


def test_a_running_job_keeps_polling(as_user, owner, exp):
    job = Job.objects.create(experiment=exp, kind="checkpoint", status="running", progress=40)
    response = as_user(owner).get(url(exp, "console:job", job.pk), **HX)
    assert response.status_code == 200
    assert 'hx-trigger="every 2s"' in response.content.decode()
    assert "HX-Trigger" not in response


def test_an_unknown_command_re_renders_with_the_error(as_user, owner, exp):
    response = as_user(owner).post(url(exp, "console:command_post"), {"command": "nuke"}, **HX)
    assert response.status_code == 422
    assert "not one of the available choices" in response.content.decode()
    assert not ContextEvent.objects.filter(experiment=exp).exists()


def test_a_round_without_a_model_player_is_refused_with_its_reason(as_user, owner, exp):
    response = as_user(owner).post(url(exp, "console:command_post"), {"command": "round"}, **HX)
    assert response.status_code == 422
    assert "human" in response.content.decode()
    assert not Job.objects.filter(experiment=exp, kind="round").exists()


@pytest.mark.parametrize("persona,status", [("player", 403), ("stranger", 404), ("anonymous", 302)])
def test_only_editors_run_commands_or_read_jobs(
    as_user, personas, exp, secrets_campaign, persona, status
):
    client = as_user(personas[persona])
    events, jobs = ContextEvent.objects.count(), Job.objects.count()
    assert (
        client.post(url(exp, "console:command_post"), {"command": "checkpoint"}).status_code
        == status
    )
    assert (ContextEvent.objects.count(), Job.objects.count()) == (events, jobs)
    assert client.get(url(exp, "console:job", secrets_campaign.job.pk)).status_code == status


def test_a_job_of_another_campaign_is_404(as_user, owner, exp):
    from tests.factories import make_experiment

    other = make_experiment(owner=owner)
    job = Job.objects.create(experiment=other, kind="checkpoint")
    assert as_user(owner).get(url(exp, "console:job", job.pk)).status_code == 404
    assert as_user(owner).get(url(exp, "console:job", "not-a-uuid")).status_code == 404


def test_junk_ids_are_404_not_500(as_user, owner):
    for pk in ("abc", "0", str(2**70)):
        assert as_user(owner).get(f"/campaigns/{pk}/").status_code == 404


def _show_whisper_existence(exp):
    exp.config = {**exp.config, "show_whisper_existence": True}
    exp.save(update_fields=["config"])


def test_whispers_a_player_cannot_read_are_hidden_without_a_trace_by_default(as_user, player, exp):
    body = as_user(player).get(url(exp)).content.decode()
    assert "Cassia whispered" not in body and "whisper-stub" not in body


def test_with_show_whisper_existence_a_player_sees_that_a_whisper_happened_not_what_it_said(
    as_user, player, exp
):
    _show_whisper_existence(exp)
    body = as_user(player).get(url(exp)).content.decode()
    assert "Cassia whispered to DM." in body and "DM whispered to Cassia." in body
    assert FORBIDDEN["cassia_whisper"] not in body
    assert FORBIDDEN["dm_reply_to_cassia"] not in body
    # The player's own whisper is shown in full, never as a stub.
    assert ALLOWED["thorin_whisper"] in body
    assert "Thorin whispered" not in body


def test_whisper_stubs_follow_the_timeline_filters(as_user, player, exp):
    _show_whisper_existence(exp)
    client = as_user(player)
    assert "Cassia whispered" not in client.get(url(exp) + "?speaker=Thorin").content.decode()
    assert "Cassia whispered" not in client.get(url(exp) + "?kind=action").content.decode()
    assert "Cassia whispered" in client.get(url(exp) + "?kind=whisper").content.decode()


def test_the_owner_reads_whispers_in_full_and_never_as_stubs(as_user, owner, exp):
    _show_whisper_existence(exp)
    body = as_user(owner).get(url(exp)).content.decode()
    assert FORBIDDEN["cassia_whisper"] in body and "whisper-stub" not in body
