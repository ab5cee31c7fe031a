"""Every writer validates through the same functions; errors name the field."""

import pytest
from django.core.exceptions import ValidationError

from campaigns.models import Turn
from campaigns.validation import clean_config, clean_visibility
from tests.factories import make_turn

pytestmark = pytest.mark.django_db

ROLES = {"DM", "Thorin", "Cassia"}


def test_null_visibility_is_public():
    assert clean_visibility(None, ROLES) is None


def test_visibility_is_normalised_sorted_and_unique():
    assert clean_visibility(["Thorin", "DM", "Thorin"], ROLES) == ["DM", "Thorin"]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (["Thorin", "Gandalf"], "Unknown role 'Gandalf'"),
        ("Thorin", "must be null (public) or a list"),
        ({"Thorin": True}, "must be null (public) or a list"),
        ([], "use null for public"),
        ([3], "must be role names"),
    ],
)
def test_bad_visibility_is_rejected_naming_the_field(value, message):
    with pytest.raises(ValidationError) as caught:
        clean_visibility(value, ROLES)
    assert message in " ".join(caught.value.message_dict["visibility"])


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("visibility", ["Nobody"]),
        ("visibility", "DM"),
        ("speaker", "Nobody"),
        ("kind", "poem"),
        ("round", -1),
        ("content", ""),
        ("tags", "npc:Vane"),
        ("hinge", "yes"),
    ],
)
def test_turn_create_rejects_bad_fields_and_stores_nothing(campaign, field, value):
    fields = {"round": 1, "speaker": "DM", "kind": "narrative", "content": "ok", field: value}
    with pytest.raises(ValidationError) as caught:
        make_turn(campaign, **fields)
    assert field in caught.value.message_dict
    assert Turn.objects.filter(experiment=campaign).count() == 0


def test_content_over_the_limit_names_the_limit(campaign, settings):
    settings.BABEL_MAX_CONTENT_CHARS = 10
    with pytest.raises(ValidationError) as caught:
        make_turn(campaign, content="x" * 11)
    assert "the limit is 10" in caught.value.message_dict["content"][0]


def test_config_accepts_known_keys():
    config = {"strategy": "triage", "budgets": {"recent": 2000}, "memory_interval": 2}
    assert clean_config(config) == config


@pytest.mark.parametrize(
    ("config", "path"),
    [
        ({"colour": "red"}, "config.colour"),
        ({"strategy": "vibes"}, "config.strategy"),
        ({"budgets": {"recent": -1}}, "config.budgets.recent"),
        ({"budgets": {"gossip": 10}}, "config.budgets.gossip"),
        ({"hot_window_rounds": 0}, "config.hot_window_rounds"),
        ({"show_whisper_existence": "yes"}, "config.show_whisper_existence"),
    ],
)
def test_bad_config_names_its_path(config, path):
    with pytest.raises(ValidationError) as caught:
        clean_config(config)
    assert path in caught.value.message_dict
