"""What one turn says about each candidate term, and when the evidence is enough.

The hydrator keeps, per experiment and audience, running statistics of these
observations (`VocabStats`), so hydrating a turn costs O(that turn): scan it, add its
observations, and ask `admits` whether a term has now earned an entry. Rules (issue 10):

- A lone capitalised word needs a capitalised use *mid-sentence* somewhere (a word that
  is only ever capitalised at a sentence start is just a sentence start) and two mentions.
- Anything else needs two mentions, except when a naming pattern introduces it ("a dwarf
  named Brannoc", "the city of Lowmere") or the DM tagged it.
- A proper name said once in narration is introduced by its form or place (issue 22):
  a title ("Lady Corisande"), a place or group head ("the Thornwick Gate"), "the" or a
  place word before it ("the Greycloaks pass", "in the Sunken Quarter"), or a run of
  capitalised words mid-sentence (`cues.names_itself`).
- Lowercase phrases count their distinct contexts, not their turns: a speaker repeating
  a stock line adds nothing (`memory.repeats`). A rare-word phrase needs two contexts;
  two everyday words need a mark first (quotes, a naming cue, "the X of Y", use as a
  subject: `phrases`), then three uses in two contexts; unmarked they are never lore.
- Out-of-character talk is never a source (`tabletalk.strip_out_of_character`).

What a sentence's wording says about a term (its category, a naming pattern) is
`memory.cues`; lowercase coinages are found by `memory.phrases`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from context_engine.memory._text import sentences
from context_engine.memory.cues import cue as category_cue
from context_engine.memory.cues import named_names, names_itself, naming
from context_engine.memory.extraction import _hits_in_sentence, merge_key
from context_engine.memory.kinds import (
    COMMON,
    COMPOUND,
    KIND_ORDER,
    NAME,
    PHRASE,
    UNMARKED,
    WORD,
)
from context_engine.memory.phrases import phrases_in_sentence
from context_engine.memory.repeats import Context, context_of, with_context
from context_engine.memory.tabletalk import is_meta_talk, strip_out_of_character
from context_engine.memory.vocabulary import guess_category, singular

COMMON_USES = 3  # a coined phrase of common words must be used this many times
PHRASE_KINDS = (PHRASE, COMMON, UNMARKED)  # lowercase phrases: their uses are contexts


@dataclass(frozen=True)
class Observation:
    """One turn's evidence about one term (merge key)."""

    key: str
    term: str
    kind: str
    category: str
    cued: bool  # the category comes from a cue in the sentence, not a guess
    sentence: str
    mentions: int  # sentences of the turn that name it
    mid: int  # capitalised uses not at a sentence start
    named: bool  # a naming pattern introduced it (or a DM tag)
    context: str = ""  # a lowercase phrase's speaker and sentence (`repeats.context_of`)


def observe(
    text: str,
    *,
    ignore: Iterable[str] = (),
    known_phrases: frozenset[str] = frozenset(),
    tags: Iterable[tuple[str, str]] = (),
    speaker: str = "",
    narration: bool = False,
) -> list[Observation]:
    """Every candidate ``text`` offers, with its evidence, first-seen order.

    ``known_phrases``: merge keys of coined common-word phrases seen marked before (in
    quotes, hyphenated): their plain uses count too. ``tags``: (name, category) the DM
    tagged the turn with; a tagged name mentioned in the text counts as introduced.
    ``speaker`` tells a stock line from a new use; ``narration`` (the DM's text) lets a
    proper name said once introduce itself.
    """
    skip = set(ignore)
    stats: dict[str, dict] = {}
    text = strip_out_of_character(text)
    if is_meta_talk(text):
        return []  # talk about the show or the players: out of character as a whole
    for sentence in sentences(text):
        named = naming(sentence)
        seen_here: set[str] = set()
        hits: list[tuple[str, bool, str]] = []
        found = _hits_in_sentence(sentence, skip)
        found_keys = {merge_key(term) for term, _ in found}
        for name in named_names(sentence):
            # A naming pattern introduces even an everyday word: "a cleric named Pike".
            if merge_key(name) not in found_keys and name not in skip:
                found.append((name, False))
                found_keys.add(merge_key(name))
        for term, at_start in found:
            if term[:1].isupper() or term.isupper():
                single = len(term.split()) == 1 and "_" not in term and not term.isupper()
                camel = single and re.search(r"[a-z][A-Z]", term) is not None
                kind = WORD if single and not camel else NAME
            else:
                kind = COMPOUND  # everyday hyphenations never got here (is_coined_compound)
            hits.append((term, at_start, kind))
        for phrase, kind in phrases_in_sentence(sentence, known_phrases):
            hits.append((phrase, False, kind))
        for term, at_start, kind in hits:
            key = merge_key(term)
            if not key:
                continue
            entry = stats.get(key)
            if entry is None:
                cue = category_cue(term, sentence)
                category = named.get(key) or cue or guess_category(term, sentence)
                entry = stats[key] = {
                    "term": term,
                    "kind": kind,
                    "category": category,
                    "cued": key in named or cue is not None,
                    "sentence": sentence,
                    "mentions": 0,
                    "mid": 0,
                    "named": False,
                }
            elif KIND_ORDER.index(kind) < KIND_ORDER.index(entry["kind"]):
                entry["kind"] = kind
            if not entry["cued"]:
                cue = named.get(key) or category_cue(term, sentence)
                if cue:
                    entry["category"], entry["cued"] = cue, True
            if key not in seen_here:
                entry["mentions"] += 1
                seen_here.add(key)
            if not at_start and kind in (WORD, NAME):
                entry["mid"] += 1
            if key in named or (narration and names_itself(term, sentence, at_start, skip)):
                entry["named"] = True
    for name, category in tags:
        key = merge_key(name)
        if key and key in stats:
            stats[key]["named"] = True
            if not stats[key]["cued"]:
                stats[key]["category"], stats[key]["cued"] = category, True
    return [
        Observation(
            key=key,
            context=(
                context_of(values["sentence"], values["term"], speaker)
                if values["kind"] in PHRASE_KINDS
                else ""
            ),
            **values,
        )
        for key, values in stats.items()
    ]


def admits(
    kind: str,
    *,
    mentions: int,
    turns: int,
    mid: int,
    named: bool,
    contexts: int | None = None,
) -> bool:
    """Has a term with this much evidence earned a World Bible entry?

    ``contexts``: how many distinct contexts a lowercase phrase was used in (a stock
    line said again is one context; `memory.repeats`), at most ``turns``.
    """
    contexts = turns if contexts is None else min(contexts, turns)
    if named:
        return True
    if kind == UNMARKED:
        return False  # two everyday words recur in any talk: lore only once marked
    if kind == COMMON:
        return mentions >= COMMON_USES and contexts >= 2
    if kind == PHRASE:
        return contexts >= 2
    if kind == WORD:
        return mentions >= 2 and mid >= 1
    return mentions >= 2


@dataclass(frozen=True)
class TermStats:
    """Running evidence for one term in one audience (a `VocabStats` row)."""

    key: str
    term: str
    kind: str
    category: str
    cued: bool
    sentence: str
    first_seq: int
    first_round: int
    last_round: int
    mentions: int
    turns: int
    mid: int
    named: bool
    source_ids: tuple[int, ...]
    contexts: tuple[Context, ...] = ()  # a lowercase phrase's distinct contexts

    def admitted(self) -> bool:
        return admits(
            self.kind,
            mentions=self.mentions,
            turns=self.turns,
            mid=self.mid,
            named=self.named,
            contexts=len(self.contexts),
        )


MAX_SOURCES = 50  # source turn ids a statistics row keeps before the entry exists


def add_observation(
    current: TermStats | None, obs: Observation, *, turn_id: int, seq: int, round_: int
) -> TermStats:
    """``current`` with one more turn's observation folded in (pure; order matters only
    for the first-use fields, which belong to the lowest seq)."""
    if current is None:
        return TermStats(
            key=obs.key,
            term=obs.term,
            kind=obs.kind,
            category=obs.category,
            cued=obs.cued,
            sentence=obs.sentence,
            first_seq=seq,
            first_round=round_,
            last_round=round_,
            mentions=obs.mentions,
            turns=1,
            mid=obs.mid,
            named=obs.named,
            source_ids=(turn_id,),
            contexts=with_context((), turn_id, obs.context) if obs.context else (),
        )
    kind = min(current.kind, obs.kind, key=KIND_ORDER.index)
    category, cued = current.category, current.cued
    if obs.cued and (not current.cued or seq < current.first_seq):
        category, cued = obs.category, True
    earlier = seq < current.first_seq
    sources = tuple(sorted({*current.source_ids, turn_id}))[:MAX_SOURCES]
    return replace(
        current,
        term=obs.term if earlier else current.term,
        kind=kind,
        category=category,
        cued=cued,
        sentence=obs.sentence if earlier else current.sentence,
        first_seq=min(seq, current.first_seq),
        first_round=min(round_, current.first_round),
        last_round=max(round_, current.last_round),
        mentions=current.mentions + obs.mentions,
        turns=current.turns + 1,
        mid=current.mid + obs.mid,
        named=current.named or obs.named,
        source_ids=sources,
        contexts=(
            with_context(current.contexts, turn_id, obs.context)
            if obs.context
            else current.contexts
        ),
    )


def combine(rows: Iterable[TermStats]) -> TermStats | None:
    """Several audiences' rows for one key, as one audience sees them together."""
    rows = sorted(rows, key=lambda r: r.first_seq)
    if not rows:
        return None
    first = rows[0]
    cued = next((r for r in rows if r.cued), first)
    contexts: tuple[Context, ...] = ()
    for row in rows:
        for turn_id, context in row.contexts:
            contexts = with_context(contexts, turn_id, context)
    return replace(
        first,
        kind=min((r.kind for r in rows), key=KIND_ORDER.index),
        category=cued.category,
        cued=cued.cued,
        last_round=max(r.last_round for r in rows),
        mentions=sum(r.mentions for r in rows),
        turns=sum(r.turns for r in rows),
        mid=sum(r.mid for r in rows),
        named=any(r.named for r in rows),
        source_ids=tuple(sorted({i for r in rows for i in r.source_ids}))[:MAX_SOURCES],
        contexts=contexts,
    )


__all__ = [
    "COMMON",
    "COMPOUND",
    "NAME",
    "PHRASE",
    "UNMARKED",
    "WORD",
    "Observation",
    "TermStats",
    "add_observation",
    "admits",
    "combine",
    "observe",
    "singular",
]
