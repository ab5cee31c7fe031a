"""`Batch`: one hydration batch: read the entries and the statistics rows it needs, fold
each turn's observations into them, create, source and invalidate entries (the writes
are `_Writes`)."""

from __future__ import annotations

from dataclasses import replace

from campaigns.models import LoreEntry, VocabularyStat
from campaigns.services.memory.batch.entries import (
    DEFINITION_WORDS,
    INVALIDATING_TAGS,
    MAX_TERM_CHARS,
    REPLAY_CHARS,
    EntryState,
    _near,
    _stats_of,
    _transposed,
    tag_names,
)
from campaigns.services.memory.batch.writes import _Writes
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
from context_engine.types import TurnView
from context_engine.visibility import Visibility, audience_key, parse_stored_visibility


class Batch(_Writes):
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
            speaker=turn.speaker,
            narration=turn.speaker in self.dms,
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
