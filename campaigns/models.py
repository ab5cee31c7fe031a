"""Babel's data model (SPEC §3).

Models hold fields, constraints and small properties. Writes go through
`campaigns.services`, reads that depend on who is looking through `campaigns.selectors`.
Visibility values are validated in one place (`services.visibility.clean_visibility`).
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from context_engine.types import PARTICIPANT_KINDS, TURN_KINDS
from context_engine.visibility import parse_stored_visibility


class Experiment(models.Model):
    """One campaign run."""

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        RUNNING = "running", "Running"
        PAUSED = "paused", "Paused"
        FINISHED = "finished", "Finished"

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

    class Meta:
        ordering = ["experiment_id", "order", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["experiment", "role"], name="participant_unique_role_per_experiment"
            ),
            models.CheckConstraint(
                condition=Q(kind__in=list(PARTICIPANT_KINDS)), name="participant_kind_valid"
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

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="turns")
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
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["experiment_id", "seq"]
        constraints = [
            # Also serves "turns of an experiment in seq order" and "seq > N" reads.
            models.UniqueConstraint(fields=["experiment", "seq"], name="turn_unique_seq"),
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
            # Not a partial index: with kind as a bound parameter the planners skip those.
            models.Index(
                fields=["experiment", "kind", "speaker", "seq"], name="turn_kind_speaker_seq"
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.seq} R{self.round} {self.speaker} ({self.kind})"

    @property
    def is_public(self) -> bool:
        return self.visibility is None

    def effective_visibility(self, dm_roles: tuple[str, ...] = ("DM",)):
        """Stored visibility as readers see it: corrupt values fail closed to DM-only."""
        return parse_stored_visibility(self.visibility, dm_roles)


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


class LoreEntry(models.Model):
    """A World Bible / glossary entry. Its audience follows the same rules as visibility."""

    class Category(models.TextChoices):
        NPC = "npc", "NPC"
        LOCATION = "location", "Location"
        ARTIFACT = "artifact", "Artifact"
        FACTION = "faction", "Faction"
        TERM = "term", "Term"

    class Status(models.TextChoices):
        PROPOSED = "proposed", "Proposed"
        CONFIRMED = "confirmed", "Confirmed"
        REJECTED = "rejected", "Rejected"

    class Origin(models.TextChoices):
        EXTRACTED = "extracted", "Extracted"
        DM = "dm", "Made by the DM"

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="lore")
    term = models.CharField(max_length=200)
    key = models.CharField(
        max_length=200, help_text="Merge key: 'the Geometers' and 'Geometer' share one."
    )
    category = models.CharField(max_length=16, choices=Category.choices, default=Category.TERM)
    definition = models.TextField(blank=True)
    audience = models.JSONField(null=True, blank=True, help_text="null = everyone.")
    audience_key = models.CharField(
        max_length=700, default="*", help_text="Normalised audience, for uniqueness."
    )
    source_turns = models.ManyToManyField(Turn, blank=True, related_name="lore_entries")
    first_seen_round = models.PositiveIntegerField(default=0)
    last_seen_round = models.PositiveIntegerField(default=0)
    mention_count = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PROPOSED)
    origin = models.CharField(max_length=16, choices=Origin.choices, default=Origin.EXTRACTED)
    locked = models.BooleanField(default=False, help_text="No background task may change it.")
    valid_from_round = models.PositiveIntegerField(null=True, blank=True)
    invalid_from_round = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["experiment_id", "term", "id"]
        verbose_name_plural = "lore entries"
        constraints = [
            models.UniqueConstraint(
                fields=["experiment", "key", "audience_key"], name="lore_unique_term_audience"
            ),
            models.CheckConstraint(
                condition=Q(invalid_from_round__isnull=True)
                | Q(valid_from_round__isnull=True)
                | Q(invalid_from_round__gte=models.F("valid_from_round")),
                name="lore_validity_ordered",
            ),
        ]
        indexes = [
            # Pack building and the glossary page: "lore of E ordered by last mention".
            models.Index(
                fields=["experiment", "status", "last_seen_round"], name="lore_by_recency"
            ),
        ]

    def __str__(self) -> str:
        return self.term


class LoreRevision(models.Model):
    """Every change to a lore entry: who or what changed it, and the old and new values."""

    entry = models.ForeignKey(LoreEntry, on_delete=models.CASCADE, related_name="revisions")
    actor = models.CharField(max_length=100, help_text="'user:alice', 'task:hydrate', 'import'…")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    changes = models.JSONField(default=dict, help_text="field → [old, new]")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["entry_id", "id"]

    def __str__(self) -> str:
        return f"{self.entry} by {self.actor}"


class Summary(models.Model):
    """A rolling digest (cold layer) for one audience, or an agent's strategic summary.

    Versions are linear: restoring an old one writes a new version with its text.
    """

    class Kind(models.TextChoices):
        DIGEST = "digest", "Memory digest"
        STRATEGIC = "strategic", "Strategic summary (own monologues)"

    class Method(models.TextChoices):
        LLM = "llm", "Model"
        FALLBACK = "fallback", "Deterministic fallback"

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="summaries")
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.DIGEST)
    audience = models.JSONField(null=True, blank=True, help_text="null = everyone.")
    audience_key = models.CharField(max_length=700, default="*")
    round_from = models.PositiveIntegerField(default=0)
    round_to = models.PositiveIntegerField(default=0)
    covered_seq = models.PositiveIntegerField(
        default=0, help_text="Turns with seq ≤ this are folded into the digest."
    )
    text = models.TextField()
    sections = models.JSONField(default=list, blank=True, help_text="[[heading, body], …]")
    source_turn_ids = models.JSONField(
        default=list, blank=True, help_text="Turns newly folded in by this version."
    )
    previous = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    method = models.CharField(max_length=16, choices=Method.choices, default=Method.FALLBACK)
    model = models.CharField(max_length=100, blank=True)
    version = models.PositiveIntegerField(default=1)
    restored_from = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The older version this one restores (a DM's restore), if any.",
    )
    restored_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Who restored it.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["experiment_id", "kind", "audience_key", "-version"]
        verbose_name_plural = "summaries"
        constraints = [
            models.UniqueConstraint(
                fields=["experiment", "kind", "audience_key", "version"],
                name="summary_unique_version",
            ),
            # Two workers folding the same audience from the same version up to the same
            # turn cannot both commit. Keyed on `previous` rather than the round range so
            # that a restored version (same range as the one it copies) and the next fold
            # after it (same range as the version before the restore) can exist.
            models.UniqueConstraint(
                fields=["experiment", "kind", "audience_key", "previous", "covered_seq"],
                name="summary_unique_successor",
            ),
            models.CheckConstraint(
                condition=Q(round_to__gte=models.F("round_from")), name="summary_range_ordered"
            ),
        ]
        indexes = [
            # Pack building: "latest digest of E for audience A" (ordered by -version).
            models.Index(
                fields=["experiment", "kind", "audience_key", "-version"], name="summary_latest"
            ),
        ]

    def __str__(self) -> str:
        rounds = f"R{self.round_from}–{self.round_to}"
        return f"{self.kind} v{self.version} for {self.audience_key} ({rounds})"


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


class Job(models.Model):
    """Background work a user started (a round, a /checkpoint…), with its progress.

    `GET /api/tasks/{id}/` and the console's progress bars read this, never Celery's own
    result store, so task status is authorised like everything else in the experiment.
    """

    class Kind(models.TextChoices):
        ROUND = "round", "Round"
        CHECKPOINT = "checkpoint", "/checkpoint"
        COMPRESS = "compress", "/compress"
        CLEAR = "clear", "/clear"
        SUMMARIZE = "summarize", "Summarize"
        ARENA = "arena", "Arena"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="jobs")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    progress = models.PositiveSmallIntegerField(default=0, help_text="0–100.")
    message = models.CharField(max_length=500, blank=True)
    result = models.JSONField(default=dict, blank=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(progress__lte=100), name="job_progress_max_100"),
            # One round at a time per experiment, even if two starts race past the lock.
            models.UniqueConstraint(
                fields=["experiment"],
                condition=Q(kind="round", status__in=["pending", "running"]),
                name="job_one_active_round",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.status} ({self.progress}%)"

    @property
    def status_line(self) -> str:
        """Status and progress only: what a reader who may not see the message is shown."""
        if self.status == self.Status.RUNNING:
            return f"{self.get_kind_display()}: running, {self.progress}%"
        return f"{self.get_kind_display()}: {self.get_status_display().lower()}"


class Fact(models.Model):
    """A planted fact the Arena scores packs on (SPEC §5.7, the transcript's ``facts``).

    Introduced in ``round``, readable by ``audience`` (null = everyone, same semantics as
    visibility), known when every string of ``answer`` appears. ``key`` is the fact's id
    in the transcript; ``position`` keeps the file's order for a byte-identical export.
    """

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="facts")
    key = models.CharField(max_length=200, help_text="The fact's id in the transcript.")
    position = models.PositiveIntegerField(default=0)
    round = models.PositiveIntegerField(default=0)
    audience = models.JSONField(null=True, blank=True, help_text="null = everyone.")
    answer = models.JSONField(default=list, help_text="Strings that must all appear.")
    question = models.TextField()

    class Meta:
        ordering = ["experiment_id", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["experiment", "key"], name="fact_unique_key"),
        ]

    def __str__(self) -> str:
        return self.key


class ArenaRun(models.Model):
    """One Arena run of an experiment: its parameters and its stored report."""

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="arena_runs")
    job = models.OneToOneField(
        Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="arena_run"
    )
    params = models.JSONField(default=dict, blank=True)
    report = models.JSONField(default=dict, blank=True, help_text="The --json report.")
    details = models.JSONField(
        default=dict, blank=True, help_text="Judge note, retention per checkpoint, counts."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            # The arena page and GET …/arena/: "the newest runs of experiment E".
            models.Index(fields=["experiment", "-created_at"], name="arena_run_newest"),
        ]

    def __str__(self) -> str:
        return f"arena run {self.pk} of experiment {self.experiment_id}"


class TurnRevision(models.Model):
    """A GM note's earlier text, kept when the DM edits or deletes it in the console.

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


class VocabularyStat(models.Model):
    """Running evidence for one candidate term among the turns of one visibility (issue 10).

    The hydrator adds each turn's observations here once (`HydrationCursor` says which
    turns are in), so hydrating a turn costs O(that turn) instead of rereading history.
    A row's audience is exactly its turns' visibility: an entry for audience V may only
    combine rows every member of V can read. Derived data: never shown to anyone.
    """

    experiment = models.ForeignKey(
        Experiment, on_delete=models.CASCADE, related_name="vocabulary_stats"
    )
    audience = models.JSONField(null=True, blank=True, help_text="null = everyone.")
    audience_key = models.CharField(max_length=700, default="*")
    key = models.CharField(max_length=200, help_text="Merge key of the term.")
    term = models.CharField(max_length=200, help_text="As first written.")
    kind = models.CharField(max_length=16)
    category = models.CharField(max_length=16, default="term")
    cued = models.BooleanField(default=False, help_text="Category from a cue, not a guess.")
    sentence = models.TextField(blank=True, help_text="First-use sentence.")
    first_seq = models.PositiveIntegerField(default=0)
    first_round = models.PositiveIntegerField(default=0)
    last_round = models.PositiveIntegerField(default=0)
    mentions = models.PositiveIntegerField(default=0)
    turns = models.PositiveIntegerField(default=0)
    mid = models.PositiveIntegerField(default=0, help_text="Capitalised uses mid-sentence.")
    named = models.BooleanField(default=False, help_text="Introduced by a naming pattern.")
    source_turn_ids = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["experiment_id", "key", "audience_key"]
        constraints = [
            models.UniqueConstraint(
                fields=["experiment", "key", "audience_key"], name="vocab_unique_key_audience"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.key} [{self.audience_key}]"


class HydrationCursor(models.Model):
    """How far the World Bible hydrator has read an experiment's log (turn seq).

    Turns up to ``seq`` are in the vocabulary statistics exactly once; the row is locked
    while a batch is added, so parallel hydrate tasks serialise and reruns add nothing.
    """

    experiment = models.OneToOneField(
        Experiment, on_delete=models.CASCADE, related_name="hydration_cursor"
    )
    seq = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"hydrated to seq {self.seq}"


class RetrievalPin(models.Model):
    """Results of a role's /search, /lore or /timeline, kept for its next pack (SPEC §5.8).

    Holds only ids: the pack re-reads them through the visibility selector as that role,
    so a pin can never show more than the role may read at pack time. A pin applies until
    the role posts its next turn (``seq`` is the experiment's last turn when it was made).
    """

    experiment = models.ForeignKey(
        Experiment, on_delete=models.CASCADE, related_name="retrieval_pins"
    )
    role = models.CharField(max_length=64)
    command = models.CharField(max_length=16)
    query = models.CharField(max_length=200)
    seq = models.PositiveIntegerField(default=0)
    turn_ids = models.JSONField(default=list, blank=True)
    lore_ids = models.JSONField(default=list, blank=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["experiment_id", "role", "id"]
        indexes = [
            # Pack building: "pins of E for role R newer than its last turn".
            models.Index(fields=["experiment", "role", "seq"], name="pin_by_role"),
        ]

    def __str__(self) -> str:
        return f"/{self.command} {self.query} for {self.role}"
