"""Console forms: they parse what a browser sends; the services validate and store it.

A service's `ValidationError` is attached to the form (`attach_errors`), so every bad
input re-renders with its field's message and nothing is half-stored.
"""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError
from django.forms.utils import ErrorDict

from campaigns.models import LoreEntry, Turn

PLAYER_KINDS = [("action", "Action"), ("whisper", "Whisper"), ("monologue", "Monologue")]
DM_KINDS = [
    ("narrative", "Narrative"),
    ("choice", "Choice"),
    ("gm_note", "GM note"),
    ("whisper", "Whisper"),
]
COMMANDS = [
    ("round", "Run a round"),
    ("checkpoint", "/checkpoint"),
    ("compress", "/compress"),
    ("clear", "/clear"),
]


def attach_errors(form: forms.Form, exc: ValidationError) -> None:
    """A service's errors onto the form: known fields by name, the rest as form errors."""
    if hasattr(exc, "error_dict"):
        for field, errors in exc.message_dict.items():
            form.add_error(field if field in form.fields else None, errors)
    else:
        form.add_error(None, exc.messages)


def _role_choices(roles):
    return [(role, role) for role in roles]


class TurnForm(forms.Form):
    """The composer: the DM narrates, offers choices, notes, whispers; a player acts."""

    kind = forms.ChoiceField(label="Kind")
    content = forms.CharField(label="Text", widget=forms.Textarea(attrs={"rows": 3}))
    recipients = forms.MultipleChoiceField(
        label="Whisper to", required=False, widget=forms.CheckboxSelectMultiple
    )
    round = forms.IntegerField(
        label="Round",
        min_value=0,
        required=False,
        widget=forms.NumberInput(attrs={"placeholder": "open round"}),
    )
    hinge = forms.BooleanField(label="Hinge", required=False)

    def __init__(
        self,
        *args,
        speaker: str,
        roles: list[str],
        is_player: bool,
        moves_clock: bool = True,
        **kwargs,
    ):
        super().__init__(*args, **kwargs)
        self.speaker = speaker
        self.fields["kind"].choices = PLAYER_KINDS if is_player else DM_KINDS
        self.fields["recipients"].choices = _role_choices(r for r in roles if r != speaker)
        if is_player:
            del self.fields["round"]
            del self.fields["hinge"]
        elif not moves_clock:
            open_round_field(self)

    @property
    def recipients_hidden(self) -> bool:
        """Recipients matter only for a whisper: hidden for any other kind shown."""
        return self["kind"].value() != "whisper"

    def clean(self):
        data = super().clean()
        if data.get("kind") == "whisper" and not data.get("recipients"):
            self.add_error("recipients", "Choose at least one recipient for a whisper.")
        return data

    def visibility(self) -> list[str] | None:
        kind = self.cleaned_data["kind"]
        if kind == "whisper":
            return sorted({self.speaker, *self.cleaned_data["recipients"]})
        if kind == "monologue":
            return [self.speaker]
        return None


class WhisperForm(forms.Form):
    """A whisper into a thread (its audience as recipients) or a new one."""

    recipients = forms.MultipleChoiceField(label="To", widget=forms.CheckboxSelectMultiple)
    content = forms.CharField(label="Whisper", widget=forms.Textarea(attrs={"rows": 2}))
    speaker = forms.ChoiceField(label="Speak as", required=False)

    def __init__(self, *args, roles: list[str], speakers: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        if len(speakers) == 1:  # a player: whispering to themself is no whisper
            roles = [role for role in roles if role != speakers[0]]
        self.fields["recipients"].choices = _role_choices(roles)
        self.fields["speaker"].choices = _role_choices(speakers)
        if len(speakers) == 1:
            self.fields["speaker"].widget = forms.HiddenInput()
        self.speakers = speakers

    def clean_speaker(self):
        return self.cleaned_data.get("speaker") or self.speakers[0]

    def clean(self):
        data = super().clean()
        speaker = data.get("speaker")
        recipients = set(data.get("recipients") or [])
        if speaker and recipients and not recipients - {speaker}:
            self.add_error("recipients", "A whisper needs at least one recipient besides you.")
        return data

    def visibility(self) -> list[str]:
        return sorted({self.cleaned_data["speaker"], *self.cleaned_data["recipients"]})


def open_round_field(form: forms.Form) -> None:
    """For someone who writes into the open round only (`turns.may_move_clock`): the round
    is not theirs to choose, so the field is hidden and empty (the open round). It stays a
    field, so a forged value reaches the service and is refused naming ``round``."""
    form.fields["round"].widget = forms.HiddenInput()
    form.initial.pop("round", None)


class NoteForm(forms.Form):
    content = forms.CharField(label="GM note", widget=forms.Textarea(attrs={"rows": 3}))
    round = forms.IntegerField(label="Round", min_value=0, required=False)

    def __init__(self, *args, moves_clock: bool = True, **kwargs):
        super().__init__(*args, **kwargs)
        if not moves_clock:
            open_round_field(self)


class InvitationForm(forms.Form):
    """Offer an open seat to a username (the service answers the same whoever it names)."""

    role = forms.ChoiceField(label="Seat")
    username = forms.CharField(label="Username", max_length=150)

    def __init__(self, *args, roles: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["role"].choices = _role_choices(roles)


class NoteEditForm(forms.Form):
    content = forms.CharField(label="Note text", widget=forms.Textarea(attrs={"rows": 3}))


class TurnEditForm(forms.Form):
    """Any turn's text, as the DM side corrects it (the old text is kept as a revision)."""

    content = forms.CharField(label="Text", strip=False, widget=forms.Textarea(attrs={"rows": 4}))


class HeldEditForm(forms.Form):
    """A held turn's text, as the DM publishes or corrects it."""

    content = forms.CharField(label="Text", strip=False, widget=forms.Textarea(attrs={"rows": 4}))


class MemoryForm(forms.Form):
    """The composer while an owner views as a role: only memory lookups for that role."""

    content = forms.CharField(
        label="Look up (/search QUERY, /lore TERM, /timeline FROM..TO)",
        widget=forms.TextInput(attrs={"placeholder": "/search the sealed door"}),
    )
    as_role = forms.CharField(widget=forms.HiddenInput, required=False)


def content_error(form: forms.Form, message: str | list[str]) -> None:
    """Show ``message`` on the composer's text field only (a lookup has no other fields)."""
    form.full_clean()
    form._errors = ErrorDict()
    form.add_error("content", message)


class RevealForm(forms.Form):
    """Widen a turn's audience: tick the roles that should read it too, or everyone."""

    add = forms.MultipleChoiceField(
        label="Also reveal to", required=False, widget=forms.CheckboxSelectMultiple
    )
    everyone = forms.BooleanField(label="Everyone", required=False)

    def __init__(self, *args, audience: list[str], roles: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.audience = audience
        self.fields["add"].choices = _role_choices(r for r in roles if r not in audience)

    def clean(self):
        data = super().clean()
        if not data.get("everyone") and not data.get("add"):
            self.add_error("add", "Tick at least one role, or Everyone.")
        return data

    def visibility(self) -> list[str] | None:
        if self.cleaned_data["everyone"]:
            return None
        return sorted({*self.audience, *self.cleaned_data["add"]})


class CommandForm(forms.Form):
    command = forms.ChoiceField(label="Command", choices=COMMANDS)


class LoreCreateForm(forms.Form):
    term = forms.CharField(label="Term", max_length=200)
    category = forms.ChoiceField(label="Category", choices=LoreEntry.Category.choices)
    definition = forms.CharField(
        label="Definition", widget=forms.Textarea(attrs={"rows": 2}), required=False
    )
    audience = forms.MultipleChoiceField(
        label="Audience (none ticked: everyone)",
        required=False,
        widget=forms.CheckboxSelectMultiple,
    )

    def __init__(self, *args, roles: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["audience"].choices = _role_choices(roles)


LORE_ACTIONS = [
    ("correct", "Save definition"),
    ("confirm", "Confirm"),
    ("reject", "Reject"),
    ("lock", "Lock"),
    ("unlock", "Unlock"),
    ("invalidate", "Invalidate"),
    ("revalidate", "Make valid again"),
]


class LoreActionForm(forms.Form):
    action = forms.ChoiceField(label="Action", choices=LORE_ACTIONS)
    definition = forms.CharField(
        label="Definition", widget=forms.Textarea(attrs={"rows": 2}), required=False
    )
    invalid_from_round = forms.IntegerField(label="From round", min_value=0, required=False)

    def clean(self):
        data = super().clean()
        if data.get("action") == "invalidate" and data.get("invalid_from_round") is None:
            self.add_error("invalid_from_round", "Give the round from which it is no longer true.")
        return data


def audience_label(audience) -> str:
    return "everyone" if audience is None else ", ".join(audience)


class LoreMergeForm(forms.Form):
    """Two entries of the World Bible; each named with its audience and status, and the
    two selects start on two different entries: the first pair with one term and one
    audience (a likely duplicate), else the first two."""

    keep = forms.TypedChoiceField(label="Keep", coerce=int)
    merge = forms.TypedChoiceField(label="Merge into it", coerce=int)

    def __init__(self, *args, entries, **kwargs):
        entries = list(entries)
        choices = [
            (
                e.pk,
                f"{e.term} — {audience_label(e.audience)} ({e.get_status_display().lower()}, "
                f"id {e.pk})",
            )
            for e in entries
        ]
        pair = _likely_duplicate(entries)
        if pair is not None and not args and "initial" not in kwargs:
            kwargs["initial"] = {"keep": pair[0], "merge": pair[1]}
        super().__init__(*args, **kwargs)
        self.fields["keep"].choices = choices
        self.fields["merge"].choices = choices

    def clean(self):
        data = super().clean()
        if data.get("keep") is not None and data.get("keep") == data.get("merge"):
            self.add_error("merge", "Choose two different entries.")
        return data


def _likely_duplicate(entries) -> tuple[int, int] | None:
    seen: dict[tuple, int] = {}
    for entry in entries:
        key = (entry.term.casefold(), tuple(entry.audience or ()) if entry.audience else None)
        if key in seen:
            return seen[key], entry.pk
        seen[key] = entry.pk
    if len(entries) >= 2:
        return entries[0].pk, entries[1].pk
    return None


class LoreBulkForm(forms.Form):
    action = forms.ChoiceField(
        label="With the selected", choices=[("confirm", "Confirm"), ("reject", "Reject")]
    )
    ids = forms.TypedMultipleChoiceField(label="Entries", coerce=int)

    def __init__(self, *args, entries, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["ids"].choices = [(e.pk, e.term) for e in entries]


class InspectorForm(forms.Form):
    input = forms.CharField(label="Input", required=False, max_length=20_000)
    compare = forms.ChoiceField(label="Compare with", required=False)

    def __init__(self, *args, roles: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["compare"].choices = [("", "(no comparison)"), *_role_choices(roles)]


def turn_kind_label(kind: str) -> str:
    return Turn.Kind(kind).label if kind in Turn.Kind.values else kind


class TranscriptUploadForm(forms.Form):
    """Import: one transcript file (the export's JSON). Size and content are the upload
    service's to judge (`campaigns.services.transcripts.uploads`)."""

    transcript = forms.FileField(
        label="Transcript file (.json)",
        widget=forms.ClearableFileInput(attrs={"accept": "application/json,.json"}),
    )
