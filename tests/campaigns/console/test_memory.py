import pytest
from django.urls import reverse

from campaigns.models import Summary
from tests.campaigns.console.conftest import ALLOWED, FORBIDDEN, HX, is_fragment
from tests.campaigns.console.matrix import READ, check_get

pytestmark = pytest.mark.django_db


def url(exp, name="console:memory", *args):
    return reverse(name, args=[exp.pk, *args])


def second_version(exp, audience, text):
    first = Summary.objects.get(experiment=exp, audience=audience, kind="digest")
    return Summary.objects.create(
        experiment=exp,
        kind="digest",
        audience=audience,
        audience_key=first.audience_key,
        round_from=1,
        round_to=2,
        covered_seq=5,
        text=text,
        previous=first,
        version=2,
    )


@pytest.mark.parametrize("persona", READ)
def test_the_memory_page_over_the_permission_matrix(as_user, personas, exp, persona):
    check_get(as_user(personas[persona]), url(exp), READ[persona], marker='id="digests"')


def test_a_player_reads_only_their_digests_and_no_job_history(as_user, player, exp):
    body = as_user(player).get(url(exp)).content.decode()
    assert ALLOWED["thorin_digest"] in body
    assert FORBIDDEN["dm_digest"] not in body and FORBIDDEN["cassia_strategy"] not in body
    assert FORBIDDEN["job_result"] not in body and "Memory and round jobs" not in body


def test_diff_between_versions_and_restore(as_user, owner, exp):
    v2 = second_version(exp, ["Thorin"], "VIS-thorin-digest\nA new line.")
    v1 = v2.previous
    client = as_user(owner)
    diff = client.get(url(exp) + f"?a={v1.pk}&b={v2.pk}", **HX)
    assert is_fragment(diff) and "+A new line." in diff.content.decode()
    response = client.post(url(exp, "console:memory_restore", v1.pk), **HX)
    assert response.status_code == 200
    latest = Summary.objects.filter(audience_key=v1.audience_key).latest("version")
    assert (latest.version, latest.text) == (3, v1.text)


def test_a_player_cannot_diff_or_restore_another_audience(as_user, player, exp):
    dm = Summary.objects.get(experiment=exp, audience=["DM"])
    thorin = Summary.objects.get(experiment=exp, audience=["Thorin"])
    client = as_user(player)
    assert client.get(url(exp) + f"?a={dm.pk}&b={thorin.pk}").status_code == 404
    count = Summary.objects.count()
    assert client.post(url(exp, "console:memory_restore", thorin.pk)).status_code == 403
    assert Summary.objects.count() == count


@pytest.mark.parametrize("persona,status", [("stranger", 404), ("anonymous", 302)])
def test_outsiders_restore_nothing(as_user, personas, exp, persona, status):
    thorin = Summary.objects.get(experiment=exp, audience=["Thorin"])
    count = Summary.objects.count()
    assert (
        as_user(personas[persona]).post(url(exp, "console:memory_restore", thorin.pk)).status_code
        == status
    )
    assert Summary.objects.count() == count


def test_the_owner_sees_the_job_history(as_user, owner, exp):
    body = as_user(owner).get(url(exp)).content.decode()
    assert "Memory and round jobs" in body and "/checkpoint" in body
