"""Admin inspection of campaigns: turns, lore, summaries, participants.

Visibility in "view as role" comes from `campaigns.reads.selectors`, like everywhere else.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError

from campaigns.models import (
    ContextEvent,
    Experiment,
    Invitation,
    LoreEntry,
    LoreRevision,
    ModelCall,
    Participant,
    Summary,
    Turn,
    TurnRevision,
    VisibilityChange,
    WorldState,
)
from campaigns.reads import selectors
from campaigns.services.providers import clean_provider_fields, provider_check_or_400
from campaigns.validation import clean_visibility


class ParticipantInline(admin.TabularInline):
    """The cast at a glance; a model and its server are changed on the participant's own
    page, where they are checked against the server."""

    model = Participant
    extra = 0
    readonly_fields = ("model",)
    fields = (
        "role",
        "kind",
        "model",
        "temperature",
        "max_output_tokens",
        "order",
        "user",
        "reveal_round",
        "bio",
        "secret",
    )


@admin.register(Experiment)
class ExperimentAdmin(admin.ModelAdmin):
    list_display = ("name", "status", "owner", "created_at")
    list_filter = ("status",)
    search_fields = ("name", "hook")
    inlines = [ParticipantInline]


class ParticipantAdminForm(forms.ModelForm):
    """The key is write-only (a password field that never renders its value; blank keeps
    the stored one), and a new model or server is checked as the API checks it: the form
    first, then the server itself (`providers.provider_check_or_400`)."""

    api_key = forms.CharField(
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False),
        help_text="The server's key, if it needs one. Never shown; blank keeps the stored key.",
    )

    class Meta:
        model = Participant
        fields = (
            "experiment", "role", "kind", "model", "base_url", "api_key", "timeout_s",
            "context_window", "temperature", "max_output_tokens", "bio", "identity", "secret",
            "reveal_round", "order", "user",
        )  # fmt: skip

    def clean_api_key(self) -> str:
        value = self.cleaned_data.get("api_key") or ""
        return value or (self.instance.api_key if self.instance.pk else "")

    def clean(self):
        data = super().clean()
        names = ("model", "base_url", "api_key", "timeout_s")
        changed = (
            not self.instance.pk
            or any(n in self.changed_data for n in names)
            or (self.cleaned_data.get("api_key") != self.instance.api_key)
        )
        if self.errors or not changed:
            return data
        connection = {name: data.get(name) for name in names}
        try:
            clean_provider_fields(
                **connection,
                context_window=data.get("context_window"),
                max_output_tokens=data.get("max_output_tokens"),
            )
            provider_check_or_400(**connection)
        except ValidationError as exc:
            for field, messages in exc.message_dict.items():
                self.add_error(field if field in self.fields else None, messages)
        return data


@admin.register(Participant)
class ParticipantAdmin(admin.ModelAdmin):
    form = ParticipantAdminForm
    list_display = (
        "role",
        "experiment",
        "kind",
        "model",
        "temperature",
        "max_output_tokens",
        "user",
    )
    list_filter = ("kind", "experiment")
    search_fields = ("role", "bio")


class PublicPrivateFilter(admin.SimpleListFilter):
    title = "audience"
    parameter_name = "audience"

    def lookups(self, request, model_admin):
        return (("public", "Public"), ("private", "Private"))

    def queryset(self, request, queryset):
        if self.value() == "public":
            return queryset.filter(visibility__isnull=True)
        if self.value() == "private":
            return queryset.filter(visibility__isnull=False)
        return queryset


class ViewAsRoleFilter(admin.SimpleListFilter):
    """Show only the turns a role may read (the selector decides)."""

    title = "view as role"
    parameter_name = "view_as"

    def lookups(self, request, model_admin):
        participants = Participant.objects.all()
        experiment_id = request.GET.get("experiment__id__exact")
        if experiment_id and experiment_id.isdigit():
            participants = participants.filter(experiment_id=int(experiment_id))
        roles = sorted(set(participants.values_list("role", flat=True)))
        return [(role, role) for role in roles]

    def queryset(self, request, queryset):
        if self.value():
            return selectors.turns_as_role(queryset=queryset, role=self.value())
        return queryset


class TurnAdminForm(forms.ModelForm):
    def clean(self):
        cleaned = super().clean()
        experiment = cleaned.get("experiment")
        if experiment is not None:
            roles = set(experiment.participants.values_list("role", flat=True))
            try:
                cleaned["visibility"] = clean_visibility(cleaned.get("visibility"), roles)
            except ValidationError as exc:
                self.add_error("visibility", exc.message_dict["visibility"])
            if cleaned.get("speaker") and cleaned["speaker"] not in roles:
                self.add_error("speaker", f"Unknown speaker; roles are {', '.join(sorted(roles))}.")
        return cleaned


@admin.register(Turn)
class TurnAdmin(admin.ModelAdmin):
    form = TurnAdminForm
    list_display = (
        "experiment",
        "round",
        "seq",
        "speaker",
        "kind",
        "visibility",
        "tokens",
        "hinge",
        "preview",
    )
    list_filter = ("experiment", "kind", "round", "hinge", PublicPrivateFilter, ViewAsRoleFilter)
    search_fields = ("content",)
    readonly_fields = ("tokens", "seq", "created_at")
    list_select_related = ("experiment",)
    ordering = ("experiment", "seq")

    @admin.display(description="content")
    def preview(self, obj: Turn) -> str:
        return obj.content if len(obj.content) <= 80 else obj.content[:79] + "…"

    def save_model(self, request, obj, form, change):
        from context_engine import tokens

        obj.tokens = tokens.count(obj.content)
        if obj.seq is None:
            from campaigns.services.turns import turn_create

            created = turn_create(
                experiment=obj.experiment,
                round=obj.round,
                speaker=obj.speaker,
                kind=obj.kind,
                content=obj.content,
                visibility=obj.visibility,
                tags=obj.tags,
                hinge=obj.hinge,
            )
            obj.pk = created.pk
            obj.seq = created.seq
            return
        super().save_model(request, obj, form, change)


class LoreRevisionInline(admin.TabularInline):
    model = LoreRevision
    extra = 0
    readonly_fields = ("actor", "user", "changes", "created_at")
    can_delete = False


@admin.register(LoreEntry)
class LoreEntryAdmin(admin.ModelAdmin):
    list_display = (
        "term",
        "experiment",
        "category",
        "status",
        "origin",
        "locked",
        "audience",
        "last_seen_round",
    )
    list_filter = ("experiment", "category", "status", "origin", "locked")
    search_fields = ("term", "definition")
    readonly_fields = ("key", "audience_key", "created_at", "updated_at")
    filter_horizontal = ("source_turns",)
    inlines = [LoreRevisionInline]


@admin.register(Summary)
class SummaryAdmin(admin.ModelAdmin):
    list_display = (
        "experiment",
        "kind",
        "audience",
        "version",
        "round_from",
        "round_to",
        "method",
        "model",
    )
    list_filter = ("experiment", "kind", "method")
    search_fields = ("text",)
    readonly_fields = ("created_at",)


@admin.register(ContextEvent)
class ContextEventAdmin(admin.ModelAdmin):
    list_display = (
        "experiment",
        "command",
        "role",
        "round",
        "seq",
        "user",
        "cleared_without_checkpoint",
        "created_at",
    )
    list_filter = ("experiment", "command")


admin.site.register(WorldState)
admin.site.register(VisibilityChange)


@admin.register(TurnRevision)
class TurnRevisionAdmin(admin.ModelAdmin):
    """GM notes' earlier text and deleted notes' snapshots (written by the console)."""

    list_display = ("experiment", "seq", "action", "speaker", "user", "created_at")
    list_filter = ("action",)
    readonly_fields = [f.name for f in TurnRevision._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(ModelCall)
class ModelCallAdmin(admin.ModelAdmin):
    """Read-only: the relay writes these; counts and stability, never prompt text."""

    list_display = (
        "experiment",
        "round",
        "role",
        "step",
        "model",
        "tokens_in",
        "tokens_cached",
        "tokens_out",
        "prefix_stable_share",
    )
    list_filter = ("experiment", "step", "model")
    exclude = ("prefix_blocks",)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    """Seats offered and their answers (made through the API and the console: a seat is
    linked only when its invitee accepts)."""

    list_display = ("experiment", "participant", "invitee", "user", "status", "created_at")
    list_filter = ("status",)
    readonly_fields = [f.name for f in Invitation._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
