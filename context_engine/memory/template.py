"""The digest's markdown form and the deterministic offline digest that fills it.

Kept apart from ``digest.py`` so the model path and the fallback share one renderer and
one parser: a digest written by either can be folded by the other next time. The offline
digest is the four headings a model must write (filled from hinge flags and tags) plus
a Key Facts part (`extractive.key_facts`) that holds the covered rounds' most
informative sentences, so history without tags is remembered too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from context_engine.memory._text import clip_words, first_sentence, sentences
from context_engine.memory.extractive import candidates, key_facts
from context_engine.tokens import count
from context_engine.types import DIGEST_HEADINGS, DigestView, TurnView

HINGES, STANDINGS, ANCHORS, THREADS = DIGEST_HEADINGS
FACTS = "Key Facts"  # the offline digest's own part; a model is not asked for it
KNOWN_HEADINGS = (*DIGEST_HEADINGS, FACTS)
FACTS_SHARE = 2  # facts may claim up to 1/FACTS_SHARE of the budget from tagged lines
NONE_LINE = "- (none yet)"
CLOSED = ("resolved", "closed", "done", "ended")
PART_WORDS = 16  # words per part of a hinge line: situation → choice → consequence
LINE_WORDS = 30

_HEADING = re.compile(r"^\s*#{1,6}\s*(.+?)\s*#*\s*$")
_HINGE = re.compile(r"^-\s*R(\d+)\s+(.+?):\s*(.*)$")
_NAMED = re.compile(r"^-\s*(?P<name>[^:(]+?)(?:\s*\((?P<paren>[^)]*)\))?:\s*(?P<rest>.*)$")

Sections = tuple[tuple[str, str], ...]


def render_digest(sections: Sections) -> str:
    return "\n\n".join(f"## {heading}\n{body}" for heading, body in sections)


def parse_digest(text: str) -> Sections:
    """Split a markdown digest into the four required sections (missing ones empty),
    then Key Facts when the digest has them."""
    canonical = {heading.lower(): heading for heading in KNOWN_HEADINGS}
    bodies: dict[str, list[str]] = {heading: [] for heading in KNOWN_HEADINGS}
    current: str | None = None
    for line in text.splitlines():
        match = _HEADING.match(line)
        if match:
            current = canonical.get(match.group(1).strip().lower())
        elif current is not None:
            bodies[current].append(line)
    sections = tuple((h, "\n".join(bodies[h]).strip()) for h in KNOWN_HEADINGS)
    return sections if sections[-1][1] else sections[:-1]


def previous_sections(previous: DigestView | None) -> dict[str, list[str]]:
    """The previous digest's bullet lines per heading, Key Facts included (placeholders
    dropped)."""
    result: dict[str, list[str]] = {heading: [] for heading in KNOWN_HEADINGS}
    if previous is None:
        return result
    sections = dict(previous.sections) if previous.sections else dict(parse_digest(previous.text))
    for heading in KNOWN_HEADINGS:
        for line in (sections.get(heading) or "").splitlines():
            line = line.strip()
            if line and line != NONE_LINE:
                result[heading].append(line if line.startswith("- ") else f"- {line.lstrip('-* ')}")
    return result


def _hinge_line(turns: Sequence[TurnView], index: int) -> str:
    turn = turns[index]
    before = turns[index - 1] if index > 0 else None
    after = turns[index + 1] if index + 1 < len(turns) else None
    situation = clip_words(first_sentence(before.content), PART_WORDS) if before else ""
    choice = clip_words(first_sentence(turn.content), PART_WORDS) or "(no text)"
    consequence = clip_words(first_sentence(after.content), PART_WORDS) if after else ""
    return (
        f"- R{turn.round} {turn.speaker}: {situation or 'earlier events'} → {choice} → "
        f"{consequence or 'pending'}"
    )


def _hinge_identity(line: str) -> tuple[str, str, str] | None:
    match = _HINGE.match(line)
    if not match:
        return None
    parts = match.group(3).split(" → ")
    choice = parts[1] if len(parts) == 3 else match.group(3)
    return match.group(1), match.group(2).lower(), choice.lower()


def hinge_lines_for(previous: dict[str, list[str]], turns: Sequence[TurnView]) -> list[str]:
    """Every hinge line the digest must hold: the previous ones, then the new turns'.

    A hinge seen again (same round, speaker and choice) replaces its old line, so a
    consequence that was "pending" gets filled in and reruns add nothing.
    """
    lines = list(previous[HINGES])
    for index, turn in enumerate(turns):
        if not turn.hinge:
            continue
        line = _hinge_line(turns, index)
        identity = _hinge_identity(line)
        for position, old in enumerate(lines):
            if identity is not None and _hinge_identity(old) == identity:
                lines[position] = line
                break
        else:
            lines.append(line)
    return lines


def _tag_values(turn: TurnView, prefix: str) -> list[str]:
    marker = prefix + ":"
    return [
        tag[len(marker) :].strip()
        for tag in turn.tags
        if tag.lower().startswith(marker) and tag[len(marker) :].strip()
    ]


def _sentence_about(name: str, turn: TurnView) -> str:
    for sentence in sentences(turn.content):
        if name.lower() in sentence.lower():
            return clip_words(sentence, LINE_WORDS)
    return clip_words(first_sentence(turn.content), LINE_WORDS)


def _name_of(line: str) -> str:
    match = _NAMED.match(line)
    return (match.group("name") if match else line.lstrip("- ")).strip().lower()


def _paren_of(line: str) -> str:
    match = _NAMED.match(line)
    return (match.group("paren") or "") if match else ""


def _merge(previous: list[str], updates: dict[str, str], closed: set[str]) -> list[str]:
    """Previous lines, updated in place by name, new names appended, closed ones removed."""
    pending = dict(updates)
    merged = []
    for line in previous:
        name = _name_of(line)
        if name in closed:
            continue
        merged.append(pending.pop(name, line))
    merged.extend(line for name, line in pending.items() if name not in closed)
    return merged


def _named_section(
    previous: list[str], turns: Sequence[TurnView], prefix: str
) -> tuple[dict[str, str], set[str], dict[str, tuple[str, str, TurnView]]]:
    """Latest turn per tagged name: {key: (name, qualifier, turn)}, plus closed names."""
    latest: dict[str, tuple[str, str, TurnView]] = {}
    closed: set[str] = set()
    for turn in turns:
        for value in _tag_values(turn, prefix):
            name, _, qualifier = value.partition(":")
            key = name.strip().lower()
            if prefix == "thread" and qualifier.strip().lower() in CLOSED:
                closed.add(key)
                latest.pop(key, None)
                continue
            closed.discard(key)
            earlier = latest.get(key, ("", "", turn))[1]
            latest[key] = (name.strip(), qualifier.strip() or earlier, turn)
    old = {_name_of(line): line for line in previous}
    return old, closed, latest


def _standings(previous: list[str], turns: Sequence[TurnView]) -> list[str]:
    old, closed, latest = _named_section(previous, turns, "faction")
    updates = {}
    for key, (name, standing, turn) in latest.items():
        standing = standing or (_paren_of(old[key]) if key in old else "")
        label = f"{name} ({standing})" if standing else name
        updates[key] = f"- {label}: {_sentence_about(name, turn)} (R{turn.round})"
    return _merge(previous, updates, closed)


def _anchors(previous: list[str], turns: Sequence[TurnView]) -> list[str]:
    old, closed, latest = _named_section(previous, turns, "npc")
    first_round: dict[str, int] = {}
    for turn in turns:
        for value in _tag_values(turn, "npc"):
            first_round.setdefault(value.partition(":")[0].strip().lower(), turn.round)
    updates = {}
    for key, (name, _, turn) in latest.items():
        since = _paren_of(old.get(key, "")) or f"since R{first_round[key]}"
        updates[key] = f"- {name} ({since}): {_sentence_about(name, turn)} (R{turn.round})"
    return _merge(previous, updates, closed)


def _threads(previous: list[str], turns: Sequence[TurnView]) -> list[str]:
    _, closed, latest = _named_section(previous, turns, "thread")
    updates = {
        key: f"- {name}: {_sentence_about(name, turn)} (R{turn.round})"
        for key, (name, _, turn) in latest.items()
    }
    return _merge(previous, updates, closed)


def _as_sections(lines: dict[str, list[str]]) -> Sections:
    return tuple((h, "\n".join(lines[h]) or NONE_LINE) for h in DIGEST_HEADINGS)


def _fit(lines: dict[str, list[str]], limit: int) -> None:
    """Drop tagged lines, lowest priority first and oldest first, until under ``limit``."""
    for heading in (ANCHORS, STANDINGS, THREADS):
        while lines[heading] and count(render_digest(_as_sections(lines))) > limit:
            lines[heading].pop(0)


def _with_facts(sections: Sections, facts: list[str]) -> Sections:
    return (*sections, (FACTS, "\n".join(facts))) if facts else sections


def build_sections(
    previous: dict[str, list[str]], turns: Sequence[TurnView], *, max_tokens: int
) -> Sections:
    """Fill the template and the key facts under ``max_tokens`` without losing a hinge.

    Tagged lines come first, as they always did; the facts take what is left, but may
    claim up to half the budget from the tagged lines (never from the hinges), so a
    tag-heavy history still keeps some of what was said.
    """
    lines = {
        HINGES: hinge_lines_for(previous, turns),
        STANDINGS: _standings(previous[STANDINGS], turns),
        ANCHORS: _anchors(previous[ANCHORS], turns),
        THREADS: _threads(previous[THREADS], turns),
    }
    _fit(lines, max_tokens)
    if count(render_digest(_as_sections(lines))) > max_tokens:
        # hinges alone overflow: shorten them, never drop them
        lines[HINGES] = [clip_words(line, 3 * PART_WORDS // 2) for line in lines[HINGES]]

    def room() -> int:  # what the facts may use once their heading is written
        return max_tokens - count(render_digest(_with_facts(_as_sections(lines), ["-"])))

    pool = candidates(previous[FACTS], turns)

    def facts(budget: int) -> list[str]:
        return key_facts(pool, budget=budget, covered=render_digest(_as_sections(lines)))

    floor = max_tokens // FACTS_SHARE
    if room() < floor:
        shortfall = count("\n".join(facts(floor))) - max(room(), 0)
        if shortfall > 0:
            _fit(lines, count(render_digest(_as_sections(lines))) - shortfall)
    return _with_facts(_as_sections(lines), facts(max(room(), 0)))


def minimal_sections(previous: dict[str, list[str]], turns: Sequence[TurnView]) -> Sections:
    """Last resort if the template itself fails: previous lines plus raw hinge lines."""
    lines = {heading: list(previous[heading]) for heading in DIGEST_HEADINGS}
    for turn in turns:
        if turn.hinge:
            text = clip_words(" ".join(turn.content.split()), LINE_WORDS)
            lines[HINGES].append(f"- R{turn.round} {turn.speaker}: {text}")
    return _with_facts(_as_sections(lines), previous[FACTS])
