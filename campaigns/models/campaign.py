"""The campaign itself: experiments, participants, turns and what happens to them."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.db.models.expressions import RawSQL

from context_engine.llm.usage import MAX_OUTPUT_TOKENS_LIMIT, TEMPERATURE_MAX
from context_engine.types import PARTICIPANT_KINDS, TURN_KINDS
from context_engine.visibility import parse_stored_visibility

MAX_TIMEOUT_S = 3600  # one model call: an hour at most (the round task's limit is 30 min)
MIN_CONTEXT_WINDOW = 512  # smaller windows hold no useful pack
MAX_CONTEXT_WINDOW = 10_000_000


class Experiment(models.Model):
    """One campaign run."""

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        RUNNING = "running", "Running"
        PAUSED = "paused", "Paused"
        FINISHED = "finished", "Finished"
        ARCHIVED = "archived", "Archived"

    name = models.CharField(max_length=200)
    hook = models.TextField(blank=True, help_text="The campaign hook every agent starts from.")
    rules = models.TextField(blank=True, help_text="Rules reference (static, minimal).")
    config = models.JSONField(
        default=dict,
        blank=True,
        help_text="Strategy, budgets, hot window, memory interval, models… (validated).",
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DRAFT)
    current_round = models.PositiveIntegerField(
        default=0,
        help_text=(
            "The campaign clock: the open round. Only the owner, staff, the relay and an "
            "import advance it; reveals, strain and retrieval read it."
        ),
    )
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="owned_experiments",
    )
    pack_version = models.UUIDField(
        default=uuid.uuid4,
        editable=False,
        help_text=(
            "Changes (to a fresh random value) on every write a pack reads; part of the "
            "pack cache's key (campaigns.services.pack_cache)."
        ),
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.name


class Participant(models.Model):
    """An agent (or a human) in an experiment, identified by its role name."""

    class Kind(models.TextChoices):
        DM = "dm", "Dungeon Master"
        PLAYER = "player", "Player"
        JUDGE = "judge", "Judge"

    experiment = models.ForeignKey(
        Experiment, on_delete=models.CASCADE, related_name="participants"
    )
    role = models.CharField(max_length=64)
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.PLAYER)
    model = models.CharField(max_length=100, default="human")
    bio = models.TextField(blank=True, help_text="Character profile; public.")
    identity = models.TextField(blank=True, help_text="System prompt / instructions.")
    secret = models.TextField(
        blank=True, help_text="Hidden goal: only this participant and judges may read it."
    )
    reveal_round = models.PositiveIntegerField(
        null=True, blank=True, help_text="After this round the secret is public."
    )
    order = models.PositiveIntegerField(default=0, help_text="Turn order within a round.")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="participations",
    )
    temperature = models.FloatField(
        null=True,
        blank=True,
        validators=[MinValueValidator(0.0), MaxValueValidator(TEMPERATURE_MAX)],
        help_text="Sampling temperature, 0–2. Blank = the provider's default.",
    )
    max_output_tokens = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_OUTPUT_TOKENS_LIMIT)],
        help_text=f"Longest answer, 1–{MAX_OUTPUT_TOKENS_LIMIT} tokens. Blank = the default.",
    )
    # Where the model runs, when not the preset's default (campaigns.services.providers).
    base_url = models.CharField(
        max_length=300,
        blank=True,
        help_text="Server base URL, e.g. http://127.0.0.1:8080/v1. Blank = the preset's.",
    )
    api_key = models.CharField(
        max_length=500,
        blank=True,
        help_text="The server's key, if it needs one. Never shown again once saved.",
    )
    timeout_s = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_TIMEOUT_S)],
        help_text=f"Seconds one model call may take, 1–{MAX_TIMEOUT_S}. Blank = the preset's.",
    )
    context_window = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(MIN_CONTEXT_WINDOW), MaxValueValidator(MAX_CONTEXT_WINDOW)],
        help_text="The model's context window in tokens. Blank = read from the server.",
    )

    class Meta:
        ordering = ["experiment_id", "order", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["experiment", "role"], name="participant_unique_role_per_experiment"
            ),
            models.CheckConstraint(
                condition=Q(kind__in=list(PARTICIPANT_KINDS)), name="participant_kind_valid"
            ),
            models.CheckConstraint(
                condition=Q(temperature__isnull=True)
                | Q(temperature__gte=0, temperature__lte=TEMPERATURE_MAX),
                name="participant_temperature_range",
            ),
            models.CheckConstraint(
                condition=Q(max_output_tokens__isnull=True)
                | Q(max_output_tokens__gte=1, max_output_tokens__lte=MAX_OUTPUT_TOKENS_LIMIT),
                name="participant_max_output_tokens_range",
            ),
            models.CheckConstraint(
                condition=Q(timeout_s__isnull=True)
                | Q(timeout_s__gte=1, timeout_s__lte=MAX_TIMEOUT_S),
                name="participant_timeout_range",
            ),
            models.CheckConstraint(
                condition=Q(context_window__isnull=True)
                | Q(context_window__gte=MIN_CONTEXT_WINDOW, context_window__lte=MAX_CONTEXT_WINDOW),
                name="participant_context_window_range",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.role} ({self.kind})"


class Turn(models.Model):
    """One entry of the campaign log. ``visibility`` null = public, else a list of roles."""

    class Kind(models.TextChoices):
        NARRATIVE = "narrative", "Narrative"
        INTEL = "intel", "Intel"
        CHOICE = "choice", "Choice"
        SYSTEM = "system", "System"
        ACTION = "action", "Action"
        WHISPER = "whisper", "Whisper"
        GM_NOTE = "gm_note", "GM note"
        MONOLOGUE = "monologue", "Monologue"

    # No index of its own: every index below starts with it (each would be a write more).
    # On PostgreSQL the rule "a turn's experiment exists" is kept by statement-level
    # triggers instead of a per-row foreign-key check (migration 0020); SQLite keeps its
    # foreign key.
    experiment = models.ForeignKey(
        Experiment,
        on_delete=models.CASCADE,
        related_name="turns",
        db_index=False,
        db_constraint=False,
    )
    round = models.PositiveIntegerField(help_text="0 = setup.")
    seq = models.PositiveIntegerField(help_text="Strictly increasing within the experiment.")
    speaker = models.CharField(max_length=64)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    content = models.TextField()
    visibility = models.JSONField(
        null=True, blank=True, help_text="null = everyone; otherwise the roles that may read it."
    )
    tags = models.JSONField(default=list, blank=True)
    hinge = models.BooleanField(default=False)
    needs_review = models.BooleanField(
        default=False, help_text="Agent output that could not be parsed (stored DM-only)."
    )
    tokens = models.PositiveIntegerField(default=0, help_text="Counted once on write.")
    # Nullable with no default: SQLite adds it in place (a rebuilt table loses triggers).
    held_at = models.DateTimeField(
        null=True,
        blank=True,
        default=None,
        help_text=(
            "Set while the output guard holds this turn for the DM's review (it quoted text "
            "its audience cannot read); null = published. Held turns reach no reader but "
            "the reviewers (campaigns.reads.selectors)."
        ),
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Nullable, not "": SQLite adds a nullable column in place (a rebuilt table would lose
    # its triggers), and NULL is what the partial unique index below leaves out.
    key = models.CharField(  # noqa: DJ001
        max_length=64,
        null=True,
        blank=True,
        default=None,
        help_text="The turn's key in an imported transcript (what questions' evidence names).",
    )

    class Meta:
        ordering = ["experiment_id", "seq"]
        constraints = [
            # Also serves "turns of an experiment in seq order" and "seq > N" reads.
            models.UniqueConstraint(fields=["experiment", "seq"], name="turn_unique_seq"),
            # Partial: only keyed (imported) turns pay the index write.
            models.UniqueConstraint(
                fields=["experiment", "key"],
                condition=Q(key__isnull=False),
                name="turn_unique_key",
            ),
            models.CheckConstraint(condition=Q(round__gte=0), name="turn_round_not_negative"),
            models.CheckConstraint(condition=Q(seq__gte=1), name="turn_seq_positive"),
            models.CheckConstraint(condition=Q(kind__in=list(TURN_KINDS)), name="turn_kind_valid"),
        ]
        indexes = [
            # Pack building: "turns of experiment E with round >= R" (hot window) and the
            # timeline's "?round=" filter.
            models.Index(fields=["experiment", "round", "seq"], name="turn_exp_round_seq"),
            # Hinge anchors beyond the window: "hinge turns of E with round >= R - TTL".
            models.Index(
                fields=["experiment", "round"],
                condition=Q(hinge=True),
                name="turn_hinge_by_round",
            ),
            # An agent's own monologues: "monologues of E by speaker S, newest first".
            # Partial: monologues are few, and every other turn skips this write. A
            # generic plan (PostgreSQL's prepared pack reads) uses it only where the query
            # says kind = 'monologue' as SQL text (`MONOLOGUE_KIND`), not as a parameter.
            models.Index(
                fields=["experiment", "speaker", "seq"],
                condition=Q(kind="monologue"),
                name="turn_monologue_by_speaker",
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.seq} R{self.round} {self.speaker} ({self.kind})"

    @property
    def is_public(self) -> bool:
        return self.visibility is None

    @property
    def is_held(self) -> bool:
        """Held by the output guard for the DM's review (`OutputHold`)."""
        return self.held_at is not None

    def effective_visibility(self, dm_roles: tuple[str, ...] = ("DM",)):
        """Stored visibility as readers see it: corrupt values fail closed to DM-only."""
        return parse_stored_visibility(self.visibility, dm_roles)


# "This turn is a monologue" with the kind as SQL text, for reads that must use the
# partial index `turn_monologue_by_speaker`: `.filter(MONOLOGUE_KIND)`.
MONOLOGUE_KIND = RawSQL(
    f""""campaigns_turn"."kind" = '{Turn.Kind.MONOLOGUE.value}'""",
    (),
    output_field=models.BooleanField(),
)


class SearchBacklog(models.Model):
    """An experiment whose imported turns are not in the search index yet.

    An import writes its turns without their search rows, the term rows (PostgreSQL:
    ``search_indexed`` false, migrations 0017 and 0037; SQLite: migration 0038), and this
    row beside them; `transcripts.index_imported_turns` (a task sent after commit) indexes
    the turns and then deletes the row. While it exists, searches also scan the
    experiment's turns that wait (`search_postgres.backlog_postings`,
    `search_sqlite.backlog_postings`): one row per import, where a partial index over the
    pending turns cost a write per turn.
    """

    experiment = models.OneToOneField(
        Experiment, on_delete=models.CASCADE, primary_key=True, related_name="+"
    )

    def __str__(self) -> str:
        return f"search backlog of experiment {self.experiment_id}"


class TurnRevision(models.Model):
    """A turn's earlier text, kept when the DM side edits a turn (or a GM note), has a
    model's step regenerated (`services.turn_fixes`), or deletes a GM note.

    A delete removes the turn from every reader (and from what was derived from it) but
    keeps its whole snapshot here for the admin: nothing the DM wrote is ever lost.
    """

    class Action(models.TextChoices):
        EDIT = "edit", "Edited"
        DELETE = "delete", "Deleted"

    experiment = models.ForeignKey(
        Experiment, on_delete=models.CASCADE, related_name="turn_revisions"
    )
    turn = models.ForeignKey(
        Turn, null=True, blank=True, on_delete=models.SET_NULL, related_name="revisions"
    )
    action = models.CharField(max_length=8, choices=Action.choices)
    seq = models.PositiveIntegerField()
    round = models.PositiveIntegerField()
    speaker = models.CharField(max_length=64)
    kind = models.CharField(max_length=16)
    visibility = models.JSONField(null=True, blank=True)
    old_content = models.TextField()
    new_content = models.TextField(blank=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["experiment_id", "id"]
        indexes = [
            # The notes page: "revisions of these turns" (edit history under each note).
            models.Index(fields=["turn", "id"], name="turnrev_by_turn"),
        ]

    def __str__(self) -> str:
        return f"{self.action} of #{self.seq} ({self.kind})"


class WorldState(models.Model):
    """Named flags and state fields with a mutation counter per field (SPEC §5.6).

    ``fields`` maps name → {"value": str, "mutations": int, "last_mutated_round": int}.
    """

    experiment = models.OneToOneField(
        Experiment, on_delete=models.CASCADE, related_name="world_state"
    )
    flags = models.JSONField(default=dict, blank=True)
    fields = models.JSONField(default=dict, blank=True)
    last_updated_round = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"World state of {self.experiment}"


class VisibilityChange(models.Model):
    """A reveal: the DM widened a turn's audience or revealed a secret goal (SPEC §4)."""

    experiment = models.ForeignKey(
        Experiment, on_delete=models.CASCADE, related_name="visibility_changes"
    )
    turn = models.ForeignKey(Turn, null=True, blank=True, on_delete=models.CASCADE)
    participant = models.ForeignKey(Participant, null=True, blank=True, on_delete=models.CASCADE)
    old_visibility = models.JSONField(null=True, blank=True)
    new_visibility = models.JSONField(null=True, blank=True)
    round = models.PositiveIntegerField(default=0)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["experiment_id", "id"]
        constraints = [
            # A secret is revealed once: the clock passing reveal_round records it once.
            models.UniqueConstraint(
                fields=["participant"],
                condition=models.Q(participant__isnull=False),
                name="one_reveal_per_secret",
            ),
        ]

    def __str__(self) -> str:
        target = f"turn {self.turn_id}" if self.turn_id else f"participant {self.participant_id}"
        return f"Reveal of {target} at R{self.round}"


class ContextEvent(models.Model):
    """A /checkpoint, /compress or /clear, with who ran it and where the log stood."""

    class Command(models.TextChoices):
        CHECKPOINT = "checkpoint", "/checkpoint"
        COMPRESS = "compress", "/compress"
        CLEAR = "clear", "/clear"

    experiment = models.ForeignKey(
        Experiment, on_delete=models.CASCADE, related_name="context_events"
    )
    command = models.CharField(max_length=16, choices=Command.choices)
    role = models.CharField(max_length=64, blank=True, help_text="Blank = every agent.")
    round = models.PositiveIntegerField(default=0)
    seq = models.PositiveIntegerField(default=0, help_text="Last turn seq when it ran.")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    cleared_without_checkpoint = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["experiment_id", "id"]
        indexes = [
            # Pack building: "latest events of E" (newest first).
            models.Index(fields=["experiment", "-id"], name="event_latest"),
        ]

    def __str__(self) -> str:
        return f"/{self.command} at R{self.round} #{self.seq}"
