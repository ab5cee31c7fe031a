"""What the memory workers keep: the World Bible, digests, vocabulary statistics, retrieval pins."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from campaigns.models.campaign import Experiment, Turn

# A World Bible entry's own fields, in the order the transcript format, the pack loader
# and the API list them.
LORE_FIELDS = (
    "term",
    "category",
    "definition",
    "audience",
    "status",
    "origin",
    "locked",
    "first_seen_round",
    "last_seen_round",
    "mention_count",
    "valid_from_round",
    "invalid_from_round",
)


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
        REPAIRED = "repaired", "Model, missing headings filled from the offline digest"
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
    contexts = models.JSONField(
        default=list,
        blank=True,
        help_text="A lowercase phrase's distinct uses, [turn id, speaker|words] "
        "(a stock line said again is not a new one).",
    )

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
