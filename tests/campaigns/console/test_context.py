import pytest
from django.urls import reverse

from tests.campaigns.console.conftest import ALLOWED, FORBIDDEN, HX
from tests.campaigns.console.matrix import READ, check_get

pytestmark = pytest.mark.django_db


def url(exp, role):
    return reverse("console:context", args=[exp.pk, role])


@pytest.mark.parametrize("persona", READ)
def test_own_role_inspector_over_the_permission_matrix(as_user, personas, exp, persona):
    check_get(
        as_user(personas[persona]), url(exp, "Thorin"), READ[persona], marker='id="inspector"'
    )


def test_another_roles_inspector_is_404_for_a_player(as_user, player, exp):
    client = as_user(player)
    assert client.get(url(exp, "DM")).status_code == 404
    assert client.get(url(exp, "Cassia"), **HX).status_code == 404
    assert client.get(url(exp, "Thorin") + "?compare=Cassia").status_code == 404


def test_an_unknown_role_is_404(as_user, owner, exp):
    assert as_user(owner).get(url(exp, "Nobody")).status_code == 404


def test_the_inspector_shows_sections_items_strain_and_both_message_formats(as_user, owner, exp):
    body = as_user(owner).get(url(exp, "Thorin")).content.decode()
    assert 'class="budget-bar"' in body
    for section in ("identity", "recent", "digest"):
        assert section in body
    assert "included" in body
    assert "Messages as sent (OpenAI-style)" in body and "system_instruction" in body
    assert ALLOWED["thorin_whisper"] in body
    assert FORBIDDEN["gm_note"] not in body


def test_the_inspector_shows_each_sections_own_share_what_it_borrowed_and_why(as_user, owner, exp):
    from campaigns.services.context import pack_for_role
    from tests.factories import make_turn

    for i in range(120):  # more than the recent window's own share holds
        make_turn(exp, content=f"Step {i}: the long stair winds past carved saints. " * 4)
    pack = pack_for_role(experiment=exp, role="Thorin", input_text="")
    lender = next(s for s in pack.sections if s.borrowed)
    body = as_user(owner).get(url(exp, "Thorin")).content.decode()
    assert "Own share" in body and "Borrowed" in body
    assert f'<td class="num">{lender.budget}</td>' in body
    assert f"+{lender.borrowed}" in body
    assert f"{lender.name} borrowed {lender.borrowed}: " in body
    assert "that other sections left unused" in body


def test_compare_two_roles_lists_what_only_one_holds(as_user, owner, exp):
    body = as_user(owner).get(url(exp, "DM") + "?compare=Thorin", **HX).content.decode()
    assert "DM vs Thorin" in body
    assert "Only DM has" in body and "Only Thorin has" in body


def test_the_input_box_rebuilds_the_pack_for_that_input(as_user, owner, exp):
    body = (
        as_user(owner).get(url(exp, "Thorin") + "?input=Where+is+the+ledger", **HX).content.decode()
    )
    assert "Where is the ledger" in body


def test_every_item_is_included_partly_included_or_cut_with_its_reason():
    from campaigns.console.views.context import inspect
    from context_engine.types import Pack, PackItem, Section, TrimEvent

    recent = Section(
        "recent",
        50,
        15,
        "text",
        items=(PackItem("turn", "turn:1", 10), PackItem("turn", "turn:2", 5)),
        trimmed=True,
    )
    pack = Pack(
        role="Thorin",
        strategy="layered",
        budget=100,
        sections=(recent,),
        trim_log=(
            TrimEvent("recent", "turn:2", "truncated", "cut to fit the budget", 3),
            TrimEvent("recent", "turn:3", "dropped", "budget exhausted", 7),
            TrimEvent("recent", "turn:4", "summarised", "covered by the digest", 4, "window"),
        ),
        total_tokens=15,
        untrimmed_tokens=29,
        pressure=0.29,
        strain="normal",
    )
    rows = {row.ref: row for row in inspect(pack)["sections"][0].items}
    assert rows["turn:1"].state == "included" and rows["turn:1"].tokens == 10
    assert rows["turn:2"].state == "partly" and "cut to fit" in rows["turn:2"].reason
    assert rows["turn:3"].state == "cut" and rows["turn:3"].tokens == 7
    assert rows["turn:4"].state == "cut" and "digest" in rows["turn:4"].reason
    assert inspect(pack)["sections"][0].share == 15.0


def test_included_lore_names_the_keyword_that_fired(as_user, owner, exp):
    from tests.factories import make_turn

    make_turn(exp, content=f"We reach {ALLOWED['public_lore']} at dusk.")
    body = as_user(owner).get(url(exp, "Thorin"), **HX).content.decode()
    assert f"keyword “{ALLOWED['public_lore']}” is in the window or input" in body
