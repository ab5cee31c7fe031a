"""The admin: participant model settings (range errors on the field, nothing saved) and
the read-only model call list."""

import pytest
from django.urls import reverse

from campaigns.services.usage import model_call_record
from context_engine.llm import Usage

pytestmark = pytest.mark.django_db


def form_data(participant, **changes):
    data = {
        "experiment": participant.experiment_id,
        "role": participant.role,
        "kind": participant.kind,
        "model": participant.model,
        "bio": participant.bio,
        "identity": participant.identity,
        "secret": participant.secret,
        "reveal_round": "",
        "order": participant.order,
        "user": "",
        "temperature": "",
        "max_output_tokens": "",
        "base_url": participant.base_url,
        "api_key": "",
        "timeout_s": "",
        "context_window": "",
    }
    data.update(changes)
    return data


@pytest.mark.parametrize(
    ("field", "value"),
    [("temperature", "2.5"), ("temperature", "-1"), ("max_output_tokens", "0"),
     ("max_output_tokens", "65537")],
)  # fmt: skip
def test_out_of_range_model_settings_are_errors_on_their_field(
    client, staff_user, campaign, field, value
):
    dm = campaign.participants.get(role="DM")
    client.force_login(staff_user)
    url = reverse("admin:campaigns_participant_change", args=[dm.pk])
    response = client.post(url, form_data(dm, **{field: value}))
    assert response.status_code == 200  # the form again, not a redirect
    assert field in response.context["adminform"].form.errors
    dm.refresh_from_db()
    assert (dm.temperature, dm.max_output_tokens) == (None, None)


def test_valid_model_settings_are_saved(client, staff_user, campaign):
    dm = campaign.participants.get(role="DM")
    client.force_login(staff_user)
    url = reverse("admin:campaigns_participant_change", args=[dm.pk])
    response = client.post(url, form_data(dm, temperature="0.4", max_output_tokens="2048"))
    assert response.status_code == 302
    dm.refresh_from_db()
    assert (dm.temperature, dm.max_output_tokens) == (0.4, 2048)


def test_model_calls_are_listed_read_only(client, staff_user, campaign):
    model_call_record(
        experiment=campaign, key="k", round=1, role="DM", step="narrate", model="offline",
        messages=[{"role": "user", "content": "Go"}], usage=Usage(12, 0, 3),
    )  # fmt: skip
    client.force_login(staff_user)
    page = client.get(reverse("admin:campaigns_modelcall_changelist"))
    assert page.status_code == 200 and "narrate" in page.content.decode()
    assert client.get(reverse("admin:campaigns_modelcall_add")).status_code == 403


def test_the_key_is_never_rendered_and_a_blank_key_keeps_the_stored_one(
    client, staff_user, campaign
):
    dm = campaign.participants.get(role="DM")
    dm.api_key = "sk-admin-secret"
    dm.save(update_fields=["api_key"])
    client.force_login(staff_user)
    url = reverse("admin:campaigns_participant_change", args=[dm.pk])
    assert "sk-admin-secret" not in client.get(url).content.decode()
    response = client.post(url, form_data(dm, api_key="", temperature="0.3", base_url="",
                                          timeout_s="", context_window=""))  # fmt: skip
    assert response.status_code == 302
    dm.refresh_from_db()
    assert (dm.api_key, dm.temperature) == ("sk-admin-secret", 0.3)


def test_a_model_whose_server_does_not_answer_is_an_error_on_its_field(
    client, staff_user, campaign
):
    dm = campaign.participants.get(role="DM")
    client.force_login(staff_user)
    url = reverse("admin:campaigns_participant_change", args=[dm.pk])
    data = form_data(
        dm, model="llamacpp:x", base_url="http://127.0.0.1:9/v1", api_key="", timeout_s="",
        context_window="",
    )  # fmt: skip
    response = client.post(url, data)
    assert response.status_code == 200
    assert "base_url" in response.context["adminform"].form.errors
    dm.refresh_from_db()
    assert dm.model == "human"
