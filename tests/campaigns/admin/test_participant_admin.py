"""The participant's model settings in the admin: range errors on the field, nothing saved."""

import pytest
from django.urls import reverse

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
