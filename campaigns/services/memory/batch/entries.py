"""What a hydration batch knows of lore entries and terms: the batch's limits, an entry's
state (`EntryState`), when two merge keys name the same thing (`_near`, `_transposed`),
a statistics row as `TermStats`, and the names a turn's tags give."""

from __future__ import annotations

from dataclasses import dataclass, field

from campaigns.models import LoreEntry, VocabularyStat
from context_engine.memory.observe import TermStats
from context_engine.memory.vocabulary import LOCATION_WORDS
from context_engine.types import TurnView
from context_engine.visibility import Visibility

HYDRATE_ACTOR = "task:hydrate"
INVALIDATING_TAGS = ("dead", "gone", "destroyed", "lost", "invalid")
TAG_CATEGORIES = {"npc": "npc", "item": "artifact", "location": "location", "faction": "faction"}
MAX_TERM_CHARS = 200
DEFINITION_WORDS = 80
_STAT_FIELDS = (
    "term",
    "kind",
    "category",
    "cued",
    "sentence",
    "first_seq",
    "first_round",
    "last_round",
    "mentions",
    "turns",
    "mid",
    "named",
    "contexts",
)


@dataclass
class EntryState:
    """What the batch knows of one lore entry (existing or about to be created)."""

    pk: int | None
    key: str
    akey: str
    audience: Visibility
    locked: bool
    origin: str
    status: str
    mention_count: int
    first_seen_round: int
    last_seen_round: int
    invalid_from_round: int | None
    valid_from_round: int | None
    term: str = ""
    category: str = "term"
    definition: str = ""
    new: bool = False
    cued: bool = False  # the category came from a cue, not a guess
    sources: list[int] = field(default_factory=list)
    changes: dict = field(default_factory=dict)

    def writable(self) -> bool:
        return (
            not self.locked
            and self.origin != LoreEntry.Origin.DM
            and self.status != LoreEntry.Status.REJECTED
        )


REPLAY_CHARS = 200  # a turn this long, repeated verbatim, is a replay


def _near(a: str, b: str) -> bool:
    """One merge key's words appear as a contiguous run in the other's, unless the longer
    one adds a place word: "Greyspine Manor" is a house, not the Greyspine family."""
    small, big = sorted((a.split(), b.split()), key=len)
    if not small or len(small) == len(big):
        return False
    for i in range(len(big) - len(small) + 1):
        if big[i : i + len(small)] == small:
            extra = big[:i] + big[i + len(small) :]
            return not any(word in LOCATION_WORDS for word in extra)
    return False


def _transposed(a: str, b: str) -> bool:
    """A misheard or mistyped spelling: two adjacent letters swapped past the first
    ("greypsine" for "greyspine"), in a word long enough for that to be unambiguous."""
    if len(a) != len(b) or len(a) < 6 or a == b or a[0] != b[0]:
        return False
    diff = [i for i in range(len(a)) if a[i] != b[i]]
    return (
        len(diff) == 2
        and diff[1] == diff[0] + 1
        and a[diff[0]] == b[diff[1]]
        and (a[diff[1]] == b[diff[0]])
    )


def _stats_of(row: VocabularyStat) -> TermStats:
    return TermStats(
        key=row.key,
        term=row.term,
        kind=row.kind,
        category=row.category,
        cued=row.cued,
        sentence=row.sentence,
        first_seq=row.first_seq,
        first_round=row.first_round,
        last_round=row.last_round,
        mentions=row.mentions,
        turns=row.turns,
        mid=row.mid,
        named=row.named,
        source_ids=tuple(row.source_turn_ids or ()),
        contexts=tuple((turn_id, context) for turn_id, context in row.contexts or ()),
    )


def tag_names(turn: TurnView) -> list[tuple[str, str]]:
    names = []
    for tag in turn.tags:
        prefix, _, rest = tag.partition(":")
        name = rest.partition(":")[0].strip()
        category = TAG_CATEGORIES.get(prefix.strip().lower())
        if category and name:
            names.append((name, category))
    return names
