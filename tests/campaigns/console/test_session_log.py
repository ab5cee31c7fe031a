"""`/campaigns/<id>/log/` — the session log per audience: the page, Markdown, the printable
page; who may read which role's log; field-named 400s for a bad role or format."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from django.utils import timezone
from django.utils.text import slugify

from campaigns.models import Participant, Turn, TurnRevision
from tests.campaigns.console.conftest import ALLOWED, FORBIDDEN, HX, is_login_redirect
from tests.factories import make_turn

pytestmark = pytest.mark.django_db

# What Thorin's log holds and what it never may (the planted markers of `secrets_campaign`).
THORIN_READS = ("public", "thorin_whisper", "thorin_monologue", "thorin_secret", "public_lore")


def log_url(exp, **params) -> str:
    query = "&".join(f"{key}={value}" for key, value in params.items())
    return reverse("console:log", args=[exp.pk]) + (f"?{query}" if query else "")


def _stored():
    return (Turn.objects.count(), TurnRevision.objects.count(), Participant.objects.count())


@pytest.mark.parametrize(
    ("who", "expected"),
    [("owner", 200), ("staff", 200), ("player", 200), ("stranger", 404), ("anonymous", "login")],
)
def test_the_log_page_answers_each_persona(as_user, personas, exp, who, expected):
    client = as_user(personas[who])
    for url in (log_url(exp), log_url(exp, format="md"), log_url(exp, format="html")):
        response = client.get(url)
        if expected == "login":
            assert is_login_redirect(response)
            assert is_login_redirect(client.get(url, **HX))
        else:
            assert response.status_code == expected, (url, response.status_code)


def test_the_log_takes_no_writes(as_user, owner, exp):
    before = _stored()
    response = as_user(owner).post(log_url(exp, format="md"), {"as": "Thorin"})
    assert response.status_code == 405
    assert _stored() == before


def test_a_players_markdown_log_holds_what_they_read_and_nothing_else(as_user, player, exp):
    response = as_user(player).get(log_url(exp, format="md"))
    assert response.status_code == 200
    assert response["Content-Type"] == "text/markdown; charset=utf-8"
    stem = f"{slugify(exp.name)}-thorin-log"
    assert response["Content-Disposition"] == f'attachment; filename="{stem}.md"'
    body = response.content.decode()
    for name in THORIN_READS:
        assert ALLOWED[name] in body, name
    assert ALLOWED["thorin_digest"] in body  # the newest digest of his own audience
    for name, marker in FORBIDDEN.items():
        assert marker not in body, name


def test_the_owner_downloads_exactly_the_log_the_player_gets(as_user, owner, player, exp):
    mine = as_user(player).get(log_url(exp, format="md")).content
    for fmt in ("md", "html"):
        theirs = as_user(player).get(log_url(exp, format=fmt)).content
        as_owner = as_user(owner).get(log_url(exp, **{"as": "Thorin", "format": fmt})).content
        assert as_owner == theirs, fmt
    assert mine.startswith(f"# {exp.name} — session log".encode())


def test_a_player_may_not_ask_for_another_roles_log(as_user, player, exp):
    client = as_user(player)
    for role in ("Cassia", "DM", "Nobody"):
        response = client.get(log_url(exp, **{"as": role, "format": "md"}))
        assert response.status_code == 403, role
        for marker in FORBIDDEN.values():
            assert marker not in response.content.decode()
    assert client.get(log_url(exp, **{"as": "Thorin", "format": "md"})).status_code == 200


def test_a_bad_role_or_format_is_a_400_naming_the_field(as_user, owner, exp):
    client = as_user(owner)
    response = client.get(log_url(exp, **{"as": "Nobody", "format": "md"}))
    assert response.status_code == 400
    assert "as: No participant with role &#x27;Nobody&#x27;" in response.content.decode()
    response = client.get(log_url(exp, format="pdf"))
    assert response.status_code == 400
    assert "format: Unknown format &#x27;pdf&#x27;" in response.content.decode()
    response = client.get(log_url(exp, **{"as": "Nobody"}))  # the page too
    assert response.status_code == 400
    for bad in ("", "MD", "txt"):
        assert client.get(log_url(exp, format=bad)).status_code == 400, bad


def test_the_dm_roles_log_has_notes_and_whispers_but_no_ones_monologue(as_user, owner, exp):
    body = as_user(owner).get(log_url(exp, **{"as": "DM", "format": "md"})).content.decode()
    for name in ("gm_note", "cassia_whisper", "dm_reply_to_cassia", "dm_lore", "cassia_lore"):
        assert FORBIDDEN[name] in body, name
    assert FORBIDDEN["cassia_monologue"] not in body
    assert ALLOWED["thorin_monologue"] not in body
    # The DM's role reads secret goals as its agent does: only once revealed.
    assert FORBIDDEN["cassia_secret"] not in body
    assert "(GM note)" in body


def test_the_owners_log_is_everything_published_but_not_held_turns(as_user, owner, exp):
    held = make_turn(exp, speaker="Thorin", kind="action", content="HELD-answer-under-review")
    Turn.objects.filter(pk=held.pk).update(held_at=timezone.now())
    body = as_user(owner).get(log_url(exp, format="md")).content.decode()
    assert FORBIDDEN["cassia_monologue"] in body
    assert ALLOWED["thorin_monologue"] in body
    assert "HELD-answer-under-review" not in body
    assert "the whole campaign (everything published)" in body
    assert FORBIDDEN["cassia_secret"] in body  # the owner's log: every secret goal


def test_turns_read_in_story_order_numbered_in_the_players_own_stream(as_user, player, exp):
    make_turn(exp, round=2, speaker="Thorin", kind="action", content="VIS-round-two")
    make_turn(exp, round=2, speaker="DM", kind="gm_note", content="ZQX-r2", visibility=["DM"])
    body = as_user(player).get(log_url(exp, format="md")).content.decode()
    assert body.index("### Round 1") < body.index(ALLOWED["public"]) < body.index("### Round 2")
    assert body.index("### Round 2") < body.index("VIS-round-two")
    numbers = [int(n) for n in re.findall(r"^\*\*#(\d+) ", body, flags=re.M)]
    assert numbers == [1, 2, 3, 4]  # public, his whisper, his monologue, round 2's action
    assert "**#2 · Thorin** *(whisper to DM)*" in body


def test_a_secret_goal_reaches_other_players_only_after_its_reveal(as_user, player, exp):
    exp.participants.filter(role="Cassia").update(reveal_round=2)
    exp.current_round = 2
    exp.save(update_fields=["current_round"])
    url = log_url(exp, format="md")
    assert FORBIDDEN["cassia_secret"] not in as_user(player).get(url).content.decode()
    exp.current_round = 3
    exp.save(update_fields=["current_round"])
    body = as_user(player).get(url).content.decode()
    assert f"Secret goal (revealed after round 2): {FORBIDDEN['cassia_secret']}" in body
    assert "Secret goal (your own, not yet revealed to the others)" in body


def test_the_printable_page_has_print_styles_and_no_console_chrome(as_user, owner, player, exp):
    make_turn(exp, speaker="Thorin", kind="action", content="<script>alert('x')</script> & co")
    response = as_user(player).get(log_url(exp, format="html"))
    assert response.status_code == 200
    assert response["Content-Type"] == "text/html; charset=utf-8"
    stem = f"{slugify(exp.name)}-thorin-log"
    assert response["Content-Disposition"] == f'inline; filename="{stem}.html"'
    body = response.content.decode()
    assert "@media print" in body
    assert 'class="tabs"' not in body and "Log out" not in body and "<script" not in body
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; co" in body
    for name in THORIN_READS:
        assert ALLOWED[name] in body, name
    for name, marker in FORBIDDEN.items():
        assert marker not in body, name


def test_the_page_offers_the_owner_every_role_and_the_export(as_user, owner, exp):
    body = as_user(owner).get(log_url(exp, **{"as": "Cassia"})).content.decode()
    assert '<option value="Cassia" selected>' in body
    assert 'name="format" value="md"' in body and 'name="format" value="html"' in body
    assert reverse("console:export", args=[exp.pk]) in body
    assert FORBIDDEN["cassia_monologue"] in body  # the preview is Cassia's log
    assert ALLOWED["thorin_monologue"] not in body


def test_the_page_offers_a_player_only_their_own_log(as_user, player, exp):
    body = as_user(player).get(log_url(exp)).content.decode()
    assert 'name="as"' not in body
    assert reverse("console:export", args=[exp.pk]) not in body
    assert 'name="format" value="md"' in body
    assert ALLOWED["thorin_monologue"] in body
    for name, marker in FORBIDDEN.items():
        assert marker not in body, name


def test_the_log_reads_in_a_bounded_number_of_queries(
    as_user, player, exp, django_assert_max_num_queries
):
    for index in range(30):
        make_turn(exp, round=1 + index // 5, speaker="Thorin", kind="action", content=f"a{index}")
    client = as_user(player)
    client.get(log_url(exp, format="md"))
    with django_assert_max_num_queries(16):
        client.get(log_url(exp, format="md"))


@pytest.fixture
def co_dm(exp):
    """A user seated at the DM participant: plays the DM's role, does not own the campaign."""
    from tests.factories import make_user

    user = make_user("co_dm")
    exp.participants.filter(role="DM").update(user=user)
    return user


def test_a_user_seated_as_the_dm_gets_the_dm_roles_log_and_no_other(as_user, co_dm, exp):
    client = as_user(co_dm)
    body = client.get(log_url(exp, format="md")).content.decode()
    assert "*For what DM may read.*" in body
    assert FORBIDDEN["gm_note"] in body and FORBIDDEN["cassia_whisper"] in body
    assert FORBIDDEN["cassia_monologue"] not in body
    assert ALLOWED["thorin_monologue"] not in body
    assert client.get(log_url(exp, **{"as": "Thorin", "format": "md"})).status_code == 403
    assert client.get(log_url(exp, **{"as": "DM", "format": "md"})).content.decode() == body
    page = client.get(log_url(exp)).content.decode()
    assert 'name="as"' not in page  # no role picker: it is their own log
    assert reverse("console:export", args=[exp.pk]) not in page
    assert client.get(reverse("console:export", args=[exp.pk])).status_code == 403


def test_the_page_previews_the_latest_rounds_and_the_downloads_hold_all(as_user, player, exp):
    for round_ in range(2, 9):
        make_turn(exp, round=round_, speaker="Thorin", kind="action", content=f"VIS-r{round_}")
    client = as_user(player)
    page = client.get(log_url(exp)).content.decode()
    assert "Preview: the last 5 rounds (the 3 before them are in the downloads)." in page
    assert "VIS-r8" in page and "VIS-r4" in page and "VIS-r3" not in page
    assert ALLOWED["public"] not in page  # round 1 is in the downloads only
    markdown = client.get(log_url(exp, format="md")).content.decode()
    assert all(f"VIS-r{r}" in markdown for r in range(2, 9)) and ALLOWED["public"] in markdown
