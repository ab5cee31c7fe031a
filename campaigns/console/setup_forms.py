"""The setup pages' forms: a campaign's settings, one participant, Play N rounds.

They only parse what a browser sends (text to numbers, blank to None); every rule is the
services' (`experiment_create` / `experiment_update` with `clean_config`,
`participant_fields`, `play_start`), the very calls the API makes, and their errors come
back onto the field that was typed (`attach_setup_errors`).
"""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError

from campaigns.models import Experiment, Participant
from campaigns.services.experiments import budgets_for_total
from campaigns.validation import HUMAN_TIMEOUT_POLICIES, effective_config
from context_engine.types import STRATEGIES

# The model field's preset picker (a <datalist>: pick one or type any id the API takes).
# Provider presets proper (issue 26) replace this list when they land.
MODEL_PRESETS = (
    ("offline", "Offline stand-in (no key, deterministic)"),
    ("human", "A human plays this seat"),
    ("gemini-2.5-flash", "Gemini 2.5 Flash"),
    ("gemini-2.5-pro", "Gemini 2.5 Pro"),
    ("openai:default", "OpenAI-compatible server (OPENAI_BASE_URL), its default model"),
    ("lmstudio:NAME", "LM Studio on 127.0.0.1:1234 (replace NAME)"),
    ("ollama:NAME", "Ollama on 127.0.0.1:11434 (replace NAME)"),
    ("llamacpp:NAME", "llama.cpp llama-server on 127.0.0.1:8080 (replace NAME)"),
    ("vllm:NAME", "vLLM on 127.0.0.1:8000 (replace NAME)"),
)
STRATEGY_HELP = {
    "full_history": "everything, trimmed oldest first",
    "sliding_window": "the last N turns only",
    "rolling_summary": "digest plus recent turns",
    "structured_state": "world state plus recent turns",
    "layered": "identity, lore, state, digest, recent, retrieval (default)",
    "triage": "ranked by importance under strain",
    "tiered": "hot / warm / cold bundles",
}
POLICY_LABELS = {
    "skip": "skip: a DM-only note says they did not act",
    "narrate": "narrate: the DM's model narrates their hesitation",
}
# config key → the form field its errors belong to.
CONFIG_FIELDS = {
    "strategy": "strategy",
    "hot_window_rounds": "hot_window_rounds",
    "memory_interval": "memory_interval",
    "human_timeout_policy": "human_timeout_policy",
    "human_timeout_s": "human_timeout_s",
    "budgets": "total_budget",
}


def attach_setup_errors(form: forms.Form, exc: ValidationError) -> None:
    """A service's errors onto the form: ``config.KEY[.…]`` onto the field that set KEY,
    other known fields by name, the rest above the form."""
    if not hasattr(exc, "error_dict"):
        form.add_error(None, exc.messages)
        return
    for key, errors in exc.message_dict.items():
        field = key
        if key.startswith("config."):
            field = CONFIG_FIELDS.get(key.split(".")[1], "")
        form.add_error(field if field in form.fields else None, errors)


def _text(label: str, rows: int = 3, **kwargs) -> forms.CharField:
    """Free text kept as typed (the API keeps it too), blank allowed."""
    return forms.CharField(
        label=label,
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": rows}),
        **kwargs,
    )


class CampaignForm(forms.Form):
    """`/campaigns/new/` and the Settings tab: the experiment and the config a DM sets."""

    name = forms.CharField(label="Name", max_length=200)
    hook = _text("Hook", help_text="The situation every agent starts from (public).")
    rules = _text("Rules", help_text="The rules reference every agent reads.")
    strategy = forms.ChoiceField(
        label="Context strategy",
        choices=[(s, f"{s} — {STRATEGY_HELP.get(s, '')}") for s in STRATEGIES],
    )
    total_budget = forms.IntegerField(
        label="Total budget (tokens per pack)",
        help_text="Shared between the sections in their current proportions.",
    )
    hot_window_rounds = forms.IntegerField(
        label="Hot window (rounds)", help_text="Recent rounds kept word for word."
    )
    memory_interval = forms.IntegerField(
        label="Memory interval (rounds)", help_text="Digests are folded every this many rounds."
    )
    human_timeout_policy = forms.ChoiceField(
        label="When a human does not act in time",
        choices=[(p, POLICY_LABELS.get(p, p)) for p in HUMAN_TIMEOUT_POLICIES],
    )
    human_timeout_s = forms.IntegerField(
        label="Human timeout (seconds)",
        required=False,
        help_text="Blank: wait until the DM skips them.",
    )

    @classmethod
    def initial_for(cls, experiment: Experiment | None) -> dict:
        config = effective_config(experiment.config if experiment else {})
        stored = (experiment.config or {}) if experiment else {}
        return {
            "name": experiment.name if experiment else "",
            "hook": experiment.hook if experiment else "",
            "rules": experiment.rules if experiment else "",
            "strategy": config["strategy"],
            "total_budget": sum(config["budgets"].values()),
            "hot_window_rounds": config["hot_window_rounds"],
            "memory_interval": config["memory_interval"],
            "human_timeout_policy": stored.get("human_timeout_policy", "skip"),
            "human_timeout_s": stored.get("human_timeout_s"),
        }

    def config(self, stored: dict | None) -> dict:
        """The config to store: ``stored`` with this form's keys set (for `clean_config`)."""
        data = self.cleaned_data
        config = dict(stored or {})
        for key in ("strategy", "hot_window_rounds", "memory_interval", "human_timeout_policy"):
            config[key] = data[key]
        if data.get("human_timeout_s") is None:
            config.pop("human_timeout_s", None)
        else:
            config["human_timeout_s"] = data["human_timeout_s"]
        budgets = effective_config(stored)["budgets"]
        if data["total_budget"] != sum(budgets.values()):
            config["budgets"] = budgets_for_total(budgets, data["total_budget"])
        return config

    def experiment_fields(self) -> dict:
        return {key: self.cleaned_data[key] for key in ("name", "hook", "rules")}


class ParticipantForm(forms.Form):
    """One seat of the cast. Who sits in it (a user) is not set here: seats are given by
    invitation (the accounts work adds its button beside each seat on the cast page)."""

    role = forms.CharField(label="Role (name)", strip=False, max_length=64)
    kind = forms.ChoiceField(label="Kind", choices=Participant.Kind.choices)
    model = forms.CharField(
        label="Model",
        max_length=100,
        initial="offline",
        help_text=(
            "Pick a preset or type an id: offline, human, gemini-…, openai:NAME, "
            "lmstudio:NAME, ollama:NAME, llamacpp:NAME, vllm:NAME."
        ),
        widget=forms.TextInput(attrs={"list": "model-presets", "autocomplete": "off"}),
    )
    bio = _text("Bio (public profile)", rows=2)
    identity = _text("Identity (its instructions)", rows=2)
    secret = _text("Secret goal", rows=2, help_text="Only this role and judges read it.")
    reveal_round = forms.IntegerField(
        label="Reveal the secret after round", required=False, help_text="Blank: never."
    )
    temperature = forms.FloatField(
        label="Temperature", required=False, help_text="0–2; blank: the provider's default."
    )
    max_output_tokens = forms.IntegerField(
        label="Max output tokens", required=False, help_text="Blank: the default."
    )
    order = forms.IntegerField(label="Turn order", required=False, help_text="Blank: last.")
    base_url = forms.CharField(
        label="Server base URL",
        required=False,
        max_length=300,
        help_text="Blank: the preset's (lmstudio:, ollama:, llamacpp:, vllm:) or OPENAI_BASE_URL.",
    )
    api_key = forms.CharField(
        label="API key",
        required=False,
        max_length=500,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text="Never shown again; blank keeps the stored one.",
    )
    timeout_s = forms.IntegerField(
        label="Timeout (seconds)", required=False, help_text="Blank: the preset's."
    )
    context_window = forms.IntegerField(
        label="Context window (tokens)",
        required=False,
        help_text="Blank: read from the server where it says.",
    )

    @classmethod
    def initial_for(cls, participant: Participant) -> dict:
        return {name: getattr(participant, name) for name in cls.base_fields if name != "api_key"}

    def participant_fields(self) -> dict:
        fields = dict(self.cleaned_data)
        if not fields.get("api_key"):
            fields.pop("api_key", None)  # blank keeps the stored key (as in the API)
        return fields


class PlayForm(forms.Form):
    rounds = forms.IntegerField(
        label="Rounds", initial=3, widget=forms.NumberInput(attrs={"min": 1, "max": 50})
    )


class ConfirmNameForm(forms.Form):
    """Delete: type the campaign's name (a slip of the mouse deletes nothing)."""

    confirm = forms.CharField(label="Type the campaign's name to delete it", strip=True)

    def __init__(self, *args, name: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.expected = name

    def clean_confirm(self):
        value = self.cleaned_data["confirm"]
        if value != self.expected.strip():
            raise ValidationError("That is not this campaign's name; nothing was deleted.")
        return value
