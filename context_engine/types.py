"""The engine's inputs and outputs: frozen dataclasses, nothing else.

`campaigns/reads/adapters.py` builds the inputs from model rows. Visibility values here are
already normalised (`None` public, else a sorted tuple of roles; `()` nobody).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter

from context_engine.visibility import Visibility

TURN_KINDS = (
    "narrative",
    "intel",
    "choice",
    "system",
    "action",
    "whisper",
    "gm_note",
    "monologue",
)
PARTICIPANT_KINDS = ("dm", "player", "judge")
LORE_CATEGORIES = ("npc", "location", "artifact", "faction", "term")
LORE_STATUSES = ("proposed", "confirmed", "rejected")
SECTION_NAMES = (
    "identity",
    "rules",
    "frozen",
    "state",
    "digest",
    "recent",
    "retrieval",
    "input",
)
DEFAULT_BUDGETS: dict[str, int] = {
    "identity": 1000,
    "rules": 1500,
    "frozen": 2500,
    "state": 1000,
    "digest": 2000,
    "recent": 3500,
    "retrieval": 1000,
    "input": 500,
}
STRATEGIES = (
    "full_history",
    "sliding_window",
    "rolling_summary",
    "structured_state",
    "layered",
    "triage",
    "tiered",
)
DIGEST_HEADINGS = (
    "Hinge Index",
    "Standing Reasons",
    "NPC Memory Anchors",
    "Open Threads",
)


def _kept_hash(view) -> int:
    """A frozen view's hash over its fields, computed once and kept on the instance. The
    hash of a str differs between processes, so a pickled view leaves it behind
    (`_state_without_hash`)."""
    try:
        return view.__dict__["_hash"]
    except KeyError:
        value = hash(tuple(getattr(view, name) for name in view.__dataclass_fields__))
        object.__setattr__(view, "_hash", value)
        return value


def _state_without_hash(view) -> dict:
    return {name: value for name, value in view.__dict__.items() if name != "_hash"}


@dataclass(frozen=True)
class TurnView:
    id: int
    seq: int
    round: int
    speaker: str
    kind: str
    content: str
    visibility: Visibility = None
    tags: tuple[str, ...] = ()
    hinge: bool = False
    tokens: int = 0  # cached count from the database; 0 means "count it"

    # A pack hashes its few hundred turns several times (the engine's per-turn caches, the
    # pack cache's key), and the loader hands it the same instances from pack to pack:
    # each keeps its hash (`_kept_hash`).
    __hash__ = _kept_hash
    __getstate__ = _state_without_hash


STORY_ORDER = attrgetter("seq", "id")  # a turn's (seq, id) sort key, built in C


@dataclass(frozen=True)
class ParticipantView:
    role: str
    kind: str  # dm | player | judge
    model: str = "human"
    bio: str = ""
    identity: str = ""
    secret: str = ""
    reveal_round: int | None = None  # after this round the secret is public


@dataclass(frozen=True)
class LoreView:
    id: int
    term: str
    category: str
    definition: str
    audience: Visibility = None
    status: str = "proposed"
    origin: str = "extracted"
    locked: bool = False
    first_seen_round: int = 0
    last_seen_round: int = 0
    mention_count: int = 1
    valid_from_round: int | None = None
    invalid_from_round: int | None = None
    source_turn_ids: tuple[int, ...] = ()
    tokens: int = 0  # cached count of ``definition``; 0 means "count it"

    # The frozen section's caches are keyed by a pack's lore (`sections._lore_candidates`),
    # the same instances from pack to pack, as turns are: each keeps its hash.
    __hash__ = _kept_hash
    __getstate__ = _state_without_hash


@dataclass(frozen=True)
class DigestView:
    """A rolling summary (cold layer) made for one audience."""

    audience: Visibility
    round_from: int
    round_to: int
    text: str
    sections: tuple[tuple[str, str], ...] = ()
    method: str = "fallback"  # llm | repaired | fallback
    version: int = 1
    source_turn_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class StateFieldView:
    name: str
    value: str
    mutations: int = 1
    last_mutated_round: int = 0
    audience: Visibility = None  # who may read this field (None = everyone)


@dataclass(frozen=True)
class WorldStateView:
    flags: tuple[tuple[str, bool], ...] = ()
    fields: tuple[StateFieldView, ...] = ()
    last_updated_round: int = 0


@dataclass(frozen=True)
class ContextEventView:
    command: str  # checkpoint | compress | clear
    round: int
    seq: int  # the last turn seq that existed when the command ran
    cleared_without_checkpoint: bool = False


@dataclass(frozen=True)
class PackConfig:
    strategy: str = "layered"
    budgets: tuple[tuple[str, int], ...] = tuple(DEFAULT_BUDGETS.items())
    hot_window_rounds: int = 4
    hinge_quota: int = 3
    hinge_ttl_rounds: int = 10
    retrieval_preset: str = "standard"  # minimal | standard | deep
    lend_unused_budget: bool = True  # shares, not walls (SPEC §5); False for a study
    show_whisper_existence: bool = False
    window_turns: int = 12  # sliding_window strategy: the last N visible turns
    # tiered strategy: token budgets of the hot / warm / cold bundles. Empty means
    # derived from the total budget (50% / 25% / 25%), see strategies.tiered.
    tier_budgets: tuple[tuple[str, int], ...] = ()

    def budget(self, section: str) -> int:
        return dict(self.budgets).get(section, 0)

    @property
    def total_budget(self) -> int:
        return sum(budget for _, budget in self.budgets)


@dataclass(frozen=True)
class ModelWindow:
    """How much one agent's model can read: its context window, where the number came
    from, and how many tokens its answer may take (`context_engine.window` fits the
    pack's budget to it)."""

    tokens: int  # the context window (Gemini: the input limit)
    output_shares: bool = True  # the answer is inside the window (local servers); not Gemini's
    reserve: int = 0  # tokens kept free for the answer (0: the caller's default)
    source: str = "declared"  # "declared", "llama.cpp /props n_ctx", "the server's error"…
    model: str = ""
    # Server tokens per token we count (cl100k_base), allowed for: see context_engine.window.
    ratio: float = 1.25


@dataclass(frozen=True)
class BudgetCap:
    """Why a pack's total budget is what it is: the campaign's, or less to fit a window."""

    campaign_budget: int
    budget: int  # the total the sections share (scaled from the campaign's when capped)
    window: int
    reserve: int  # kept for the answer
    margin: int  # kept for tokenizer differences and the chat template
    capped: bool
    source: str
    model: str = ""

    @property
    def reason(self) -> str:
        where = f"{self.model}'s " if self.model else "the model's "
        room = (
            f"{where}{self.window}-token window ({self.source}) less {self.reserve} for the "
            f"answer and a {self.margin}-token margin"
        )
        if self.capped:
            return (
                f"capped at {self.budget} of the campaign's {self.campaign_budget} tokens: "
                f"{room}; every section's share scaled by the same factor"
            )
        return f"the campaign's {self.campaign_budget} tokens fit {room}"


@dataclass(frozen=True)
class HistoryNeeds:
    """What the caller must load for one pack (see ``commands.history_needs``).

    The loader takes the union of: every visible turn when ``full``; visible turns with
    ``round >= from_round``; hinge turns with ``round >= hinge_from_round``; the last
    ``last_turns`` visible turns *not counting the role's own monologues*; the role's
    own last ``monologue_count`` monologues; the ``retrieval_candidates`` best-ranked
    readable turns (the role's own monologues among them) for the retrieval query
    (`context_engine.retrieval.query_for`, BM25,
    passed as ``PackInput.retrieval_turns`` best first) and the ``retrieval_neighbours``
    nearest readable turns on each side of each (``PackInput.retrieval_context``), of
    the first ``retrieval.NEIGHBOURS_FIRST`` ``retrieval_first_neighbours`` when wider.
    ``None`` means "nothing by that rule". The engine re-filters whatever
    it is given, so loading more is safe; loading less changes the pack.
    """

    full: bool = False
    from_round: int | None = None
    hinge_from_round: int | None = None
    last_turns: int = 0
    monologue_count: int = 0
    retrieval_candidates: int = 0
    retrieval_neighbours: int = 0  # readable turns on each side of every retrieval hit
    retrieval_first_neighbours: int = 0  # ... of the best hits (`retrieval.Preset`)
    cut_seq: int | None = None  # seq of the last /checkpoint or /clear, if any
    # show_whisper_existence: also load whispers the role may NOT read in the same
    # ranges (for ``last_turns``: seq >= the oldest of those turns); the engine renders
    # only "Cassia whispered to DM", never their content.
    unreadable_whispers: bool = False


@dataclass(frozen=True)
class PackInput:
    """Everything the engine needs to build one agent's pack.

    ``turns`` are candidates; the engine filters them for ``role`` before it cuts any
    window, so a caller that passes too much cannot leak. ``retrieval_turns`` are older
    turns that matched the input in full-text search (also filtered again here).
    """

    role: str
    participants: tuple[ParticipantView, ...]
    turns: tuple[TurnView, ...]
    config: PackConfig = field(default_factory=PackConfig)
    hook: str = ""
    rules: str = ""
    current_round: int = 0  # the campaign clock: reveals, windows and TTLs read it
    input_text: str = ""
    lore: tuple[LoreView, ...] = ()
    digest: DigestView | None = None
    strategic_summary: DigestView | None = None  # the agent's own condensed monologues
    world_state: WorldStateView = field(default_factory=WorldStateView)
    retrieval_turns: tuple[TurnView, ...] = ()
    retrieval_context: tuple[TurnView, ...] = ()  # the hits' neighbouring turns
    events: tuple[ContextEventView, ...] = ()
    # Results of the role's own /search, /lore, /timeline, for its next pack (filtered
    # again for the role here, like everything else).
    pinned_retrieval: tuple[TurnView | LoreView, ...] = ()
    # The agent's model window: the total budget is capped to fit it (`window.fit`).
    window: ModelWindow | None = None


@dataclass(frozen=True)
class PackItem:
    """One thing placed in a section: a turn, a lore entry, a digest, a text block."""

    kind: str  # turn | lore | lore_name | digest | bio | hook | text | anchor | notice ...
    ref: str  # e.g. "turn:42", "lore:7", "participant:Thorin"
    tokens: int


@dataclass(frozen=True)
class TrimEvent:
    section: str
    ref: str
    action: str  # dropped | degraded | truncated | summarised
    reason: str
    tokens_saved: int = 0
    # budget: cut to fit a cap · strain: a memory-strain effect (§5.2) · window: the
    # strategy's window policy (older than the window, command cuts, monologue rule,
    # hinge quota/TTL, condensed tiers) · lending: unused budget lent to this section
    # (SPEC §5: shares, not walls). Only budget and strain mark a section trimmed,
    # so ``trimmed`` does not depend on how much history the caller happened to load.
    cause: str = "budget"


@dataclass(frozen=True)
class Section:
    name: str
    budget: int
    tokens: int
    text: str
    items: tuple[PackItem, ...] = ()
    trimmed: bool = False
    borrowed: int = 0  # tokens used beyond its own share (``budget``), lent by others


@dataclass(frozen=True)
class Pack:
    role: str
    strategy: str
    budget: int
    sections: tuple[Section, ...]
    trim_log: tuple[TrimEvent, ...]
    total_tokens: int
    untrimmed_tokens: int
    pressure: float
    strain: str  # normal | strain_1 | strain_2 | strain_3
    warnings: tuple[str, ...] = ()
    cap: BudgetCap | None = None  # set when the agent's model window was known
