"""The World Bible hydrator's batch engine: incremental statistics, bulk writes.

A batch reads the turns after the experiment's `HydrationCursor` (locked for the whole
batch, so hydrate tasks serialise and a redelivered one adds nothing), folds each turn's
observations (`context_engine.memory.observe`) into the per-audience `VocabularyStat`
rows, creates entries whose evidence is now enough, adds the turn as a source of the
entries it mentions, applies invalidation tags, and writes it all in a handful of bulk
statements. Cost: O(batch turns + the statistics rows their terms touch + the entry
keys), never O(history). Rules about audiences are the hydrator's (module doc of
`hydrate`): an entry for audience V draws only on rows every member of V can read.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from django.db import IntegrityError, transaction
from django.utils import timezone

from campaigns.models import LoreEntry, LoreRevision, VocabularyStat
from context_engine.memory import merge_key, readable_by_audience
from context_engine.memory._text import clip_words
from context_engine.memory.observe import (
    COMMON,
    Observation,
    TermStats,
    add_observation,
    combine,
    observe,
)
from context_engine.memory.tabletalk import is_ooc_speaker
from context_engine.memory.vocabulary import LOCATION_WORDS
from context_engine.types import TurnView
from context_engine.visibility import Visibility, audience_key, parse_stored_visibility

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


class Batch:
    """One hydration batch of one experiment. Call `add` per turn in seq order, then
    `flush` inside the transaction that holds the cursor lock."""

    def __init__(self, experiment, *, roles: list[str], dms: tuple[str, ...]):
        self.replays: set[tuple[str, str]] = set()
        self.experiment = experiment
        self.roles = roles
        self.dms = dms
        self.entries: list[EntryState] = []
        self.keys: dict[str, dict[str, EntryState]] = {}
        rows = LoreEntry.objects.filter(experiment=experiment).values_list(
            "pk",
            "key",
            "audience_key",
            "audience",
            "locked",
            "origin",
            "status",
            "mention_count",
            "first_seen_round",
            "last_seen_round",
            "invalid_from_round",
            "valid_from_round",
        )
        for pk, key, akey, audience, *rest in rows:
            state = EntryState(pk, key, akey, parse_stored_visibility(audience, dms), *rest)
            self._index(state)
        self.stats: dict[tuple[str, str], TermStats] = {}
        self.stat_pks: dict[tuple[str, str], int] = {}
        self.stat_audience: dict[str, Visibility] = {}
        self.akeys_of: dict[str, set[str]] = {}
        self.loaded_keys: set[str] = set()
        self.dirty: set[tuple[str, str]] = set()
        self.known_phrases: set[str] = set(
            VocabularyStat.objects.filter(experiment=experiment, kind=COMMON)
            .values_list("key", flat=True)
            .distinct()
        )
        self.created: list[EntryState] = []
        self.updated: list[EntryState] = []
        self.invalidated: list[EntryState] = []

    # -- reads ------------------------------------------------------------------------
    def _index(self, state: EntryState) -> None:
        self.entries.append(state)
        self.keys.setdefault(state.akey, {})[state.key] = state

    def load_stats(self, keys) -> None:
        """Fetch the statistics rows of ``keys`` (every audience) not fetched yet."""
        wanted = sorted(set(keys) - self.loaded_keys)
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            rows = VocabularyStat.objects.filter(experiment=self.experiment, key__in=chunk)
            for row in rows:
                slot = (row.audience_key, row.key)
                self.stats[slot] = _stats_of(row)
                self.stat_pks[slot] = row.pk
                self.stat_audience[row.audience_key] = parse_stored_visibility(
                    row.audience, self.dms
                )
                self.akeys_of.setdefault(row.key, set()).add(row.audience_key)
        self.loaded_keys.update(wanted)

    def observe(self, turn: TurnView) -> list[Observation]:
        if is_ooc_speaker(turn.speaker):
            return []
        if len(turn.content) >= REPLAY_CHARS:
            # A long text said again word for word (a recap read out, intro videos played
            # twice) is a replay, not a second use: it adds no evidence. Within a batch.
            text = " ".join(turn.content.split())[:REPLAY_CHARS]  # a replay may end early
            fingerprint = (audience_key(turn.visibility), text)
            if fingerprint in self.replays:
                return []
            self.replays.add(fingerprint)
        found = observe(
            turn.content,
            ignore=self.roles,
            known_phrases=frozenset(self.known_phrases),
            tags=tag_names(turn),
        )
        # A "name" longer than a column holds is a shouted sentence, not lore.
        return [
            o if len(o.term) <= MAX_TERM_CHARS else replace(o, term=o.term[:MAX_TERM_CHARS])
            for o in found
            if len(o.key) <= MAX_TERM_CHARS
        ]

    def _match(self, akey: str, key: str) -> EntryState | None:
        entries = self.keys.get(akey, {})
        if key in entries:
            return entries[key]
        near = [state for other, state in entries.items() if _near(key, other)]
        if not near:
            near = [state for other, state in entries.items() if _transposed(key, other)]
        return near[0] if len(near) == 1 else None

    def _covering(self, visibility: Visibility, key: str) -> EntryState | None:
        own = audience_key(visibility)
        for akey in sorted(self.keys):
            if akey == own:
                continue
            audience = None if akey == "*" else tuple(filter(None, akey.split("|")))
            if readable_by_audience(audience, visibility):
                state = self._match(akey, key)
                if state is not None:
                    return state
        return None

    # -- one turn ---------------------------------------------------------------------
    def add(self, turn: TurnView, observations: list[Observation] | None = None) -> None:
        if observations is None:
            observations = self.observe(turn)
        self.load_stats(o.key for o in observations)
        akey = audience_key(turn.visibility)
        self.stat_audience.setdefault(akey, turn.visibility)
        for obs in observations:
            slot = (akey, obs.key)
            self.stats[slot] = add_observation(
                self.stats.get(slot), obs, turn_id=turn.id, seq=turn.seq, round_=turn.round
            )
            self.akeys_of.setdefault(obs.key, set()).add(akey)
            self.dirty.add(slot)
            if obs.kind == COMMON:
                self.known_phrases.add(obs.key)
        for obs in observations:
            state = self._match(akey, obs.key)
            if state is None:
                if self._covering(turn.visibility, obs.key) is not None:
                    continue  # a broader entry already tells this audience about it
                self._maybe_create(obs, turn)
            else:
                if state.new and not state.cued and obs.cued and obs.key == state.key:
                    # made in this batch from a guess; the first cue corrects it
                    state.category, state.cued = obs.category, True
                self._add_source(state, turn)
        self._invalidate(turn)

    def _maybe_create(self, obs: Observation, turn: TurnView) -> None:
        rows = [
            self.stats[(akey, obs.key)]
            for akey in sorted(self.akeys_of.get(obs.key, ()))
            if readable_by_audience(self.stat_audience[akey], turn.visibility)
        ]
        evidence = combine(rows)
        if evidence is None or not evidence.admitted():
            return
        state = EntryState(
            pk=None,
            key=obs.key,
            akey=audience_key(turn.visibility),
            audience=turn.visibility,
            locked=False,
            origin=LoreEntry.Origin.EXTRACTED,
            status=LoreEntry.Status.PROPOSED,
            mention_count=evidence.turns,
            first_seen_round=evidence.first_round,
            last_seen_round=max(evidence.last_round, turn.round),
            invalid_from_round=None,
            valid_from_round=None,
            term=evidence.term[:MAX_TERM_CHARS],
            category=evidence.category,
            definition=clip_words(evidence.sentence, DEFINITION_WORDS),
            new=True,
            cued=evidence.cued,
            sources=sorted({*evidence.source_ids, turn.id}),
        )
        self._index(state)
        self.created.append(state)

    def _add_source(self, state: EntryState, turn: TurnView) -> None:
        if not state.writable() or not readable_by_audience(turn.visibility, state.audience):
            return
        if turn.id in state.sources:
            return
        state.sources.append(turn.id)
        if state.new:
            state.mention_count += 1
            state.last_seen_round = max(state.last_seen_round, turn.round)
            state.first_seen_round = min(state.first_seen_round, turn.round)
            return
        before = {
            "mention_count": state.mention_count,
            "first_seen_round": state.first_seen_round,
            "last_seen_round": state.last_seen_round,
        }
        state.mention_count += 1
        state.first_seen_round = min(state.first_seen_round, turn.round)
        state.last_seen_round = max(state.last_seen_round, turn.round)
        for name, old in before.items():
            new = getattr(state, name)
            if new != old:
                state.changes.setdefault(name, [old, new])[1] = new
        if state not in self.updated:
            self.updated.append(state)

    def _invalidate(self, turn: TurnView) -> None:
        for tag in turn.tags:
            prefix, _, rest = tag.partition(":")
            if prefix.strip().lower() not in INVALIDATING_TAGS:
                continue
            key = merge_key(rest.partition(":")[0])
            if not key:
                continue
            for akey in sorted(self.keys):
                state = self._match(akey, key)
                if state is None or state.locked or state.origin == LoreEntry.Origin.DM:
                    continue
                if not readable_by_audience(turn.visibility, state.audience):
                    continue
                current = state.invalid_from_round
                if current is not None and current <= turn.round:
                    continue
                if state.valid_from_round is not None and turn.round < state.valid_from_round:
                    continue
                state.invalid_from_round = turn.round
                if not state.new:
                    state.changes.setdefault("invalid_from_round", [current, turn.round])[1] = (
                        turn.round
                    )
                    state.changes.setdefault("turn", [None, turn.id])
                if state not in self.invalidated:
                    self.invalidated.append(state)

    # -- writes -----------------------------------------------------------------------
    def flush(self) -> None:
        """Write the statistics, new entries, sources, updates and revisions."""
        self._flush_stats()
        self._flush_created()
        self._flush_updated()

    def _flush_stats(self) -> None:
        creates, updates = [], []
        for slot in sorted(self.dirty):
            akey, key = slot
            stats = self.stats[slot]
            values = {name: getattr(stats, name) for name in _STAT_FIELDS}
            values["source_turn_ids"] = list(stats.source_ids)
            if slot in self.stat_pks:
                updates.append(VocabularyStat(pk=self.stat_pks[slot], **values))
            else:
                audience = self.stat_audience[akey]
                creates.append(
                    VocabularyStat(
                        experiment=self.experiment,
                        audience=None if audience is None else list(audience),
                        audience_key=akey,
                        key=key,
                        **values,
                    )
                )
        VocabularyStat.objects.bulk_create(creates, batch_size=500)
        VocabularyStat.objects.bulk_update(
            updates, [*_STAT_FIELDS, "source_turn_ids"], batch_size=500
        )
        self.dirty.clear()

    def _flush_created(self) -> None:
        through = LoreEntry.source_turns.through
        links, revisions = [], []
        for state in self.created:
            try:
                with transaction.atomic():
                    entry = LoreEntry.objects.create(
                        experiment=self.experiment,
                        term=state.term,
                        key=state.key,
                        category=state.category,
                        definition=state.definition,
                        audience=None if state.audience is None else list(state.audience),
                        audience_key=state.akey,
                        first_seen_round=state.first_seen_round,
                        last_seen_round=state.last_seen_round,
                        mention_count=state.mention_count,
                        invalid_from_round=state.invalid_from_round,
                        status=LoreEntry.Status.PROPOSED,
                        origin=LoreEntry.Origin.EXTRACTED,
                    )
            except IntegrityError:  # a DM (or another writer) made it meanwhile: theirs wins
                state.pk = None
                continue
            state.pk = entry.pk
            links += [through(loreentry_id=entry.pk, turn_id=tid) for tid in state.sources]
            revisions.append(
                LoreRevision(
                    entry_id=entry.pk,
                    actor=HYDRATE_ACTOR,
                    changes={
                        "term": [None, entry.term],
                        "category": [None, entry.category],
                        "definition": [None, entry.definition],
                        "audience": [None, entry.audience],
                        "status": [None, entry.status],
                    },
                )
            )
        self.created = [state for state in self.created if state.pk is not None]
        through.objects.bulk_create(links, batch_size=1000, ignore_conflicts=True)
        LoreRevision.objects.bulk_create(revisions, batch_size=500)

    def _flush_updated(self) -> None:
        changed = [s for s in self.entries if not s.new and s.changes]
        if not changed:
            return
        # A DM may have locked or rejected an entry since the batch read it: theirs wins.
        current = {
            pk: (locked, origin, status)
            for pk, locked, origin, status in LoreEntry.objects.select_for_update()
            .filter(pk__in=[s.pk for s in changed])
            .values_list("pk", "locked", "origin", "status")
        }
        through = LoreEntry.source_turns.through
        rows, links, revisions = [], [], []
        now = timezone.now()
        for state in changed:
            locked, origin, status = current.get(state.pk, (True, "dm", "rejected"))
            if locked or origin == LoreEntry.Origin.DM:
                continue
            if status == LoreEntry.Status.REJECTED and set(state.changes) - {
                "invalid_from_round",
                "turn",
            }:
                continue
            added = [t for t in state.sources]
            links += [through(loreentry_id=state.pk, turn_id=tid) for tid in added]
            rows.append(
                LoreEntry(
                    pk=state.pk,
                    mention_count=state.mention_count,
                    first_seen_round=state.first_seen_round,
                    last_seen_round=state.last_seen_round,
                    invalid_from_round=state.invalid_from_round,
                    updated_at=now,
                )
            )
            changes = dict(state.changes)
            if added:
                changes["source_turns"] = [None, added[0] if len(added) == 1 else added]
            revisions.append(LoreRevision(entry_id=state.pk, actor=HYDRATE_ACTOR, changes=changes))
        LoreEntry.objects.bulk_update(
            rows,
            [
                "mention_count",
                "first_seen_round",
                "last_seen_round",
                "invalid_from_round",
                "updated_at",
            ],
            batch_size=500,
        )
        through.objects.bulk_create(links, batch_size=1000, ignore_conflicts=True)
        LoreRevision.objects.bulk_create(revisions, batch_size=500)
        self.updated = [s for s in self.updated if s.pk in {r.pk for r in rows}]
        self.invalidated = [s for s in self.invalidated if s.new or s.pk in {r.pk for r in rows}]
