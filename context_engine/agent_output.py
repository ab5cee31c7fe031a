"""The format agents answer in, and its parser (SPEC §4, last bullet; §6).

An agent's answer is a list of *blocks*. A block starts on its own line with a label and
a colon; its text runs to the next label. Labels are matched case-insensitively at the
start of a line (markdown decoration such as ``**PUBLIC:**`` or ``- PUBLIC:`` is
tolerated)::

    PUBLIC: what everyone sees (a player's action; the DM's narration)
    WHISPER to DM: a private message; recipients after "to", comma-separated
    MONOLOGUE: private thoughts only the speaker will ever read
    GM NOTE: the DM's private notes (DM only)
    CHOICE: the options the DM offers the players (DM only, public)
    TAGS: npc:Maelis Orrow, thread:the door      (modifier: the block above)
    HINGE                                          (modifier: the block above is a turning point)

``NARRATION:`` / ``NARRATIVE:`` / ``ACTION:`` are accepted as synonyms of ``PUBLIC:``.
``TAGS`` and ``HINGE`` lines written before the first block apply to the first block.

Visibility of what is parsed:

- PUBLIC / CHOICE → public (``None``); the only way anything becomes public.
- WHISPER → the speaker plus its recipients; when a player whispers, the DM roles are
  added (the relay's default, SPEC §4). ``DM`` / ``GM`` name the DM roles when no
  participant is literally called that. A player's ``WHISPER:`` without recipients goes
  to the DM.
- MONOLOGUE → ``[speaker]``. GM NOTE → the DM roles.

Everything else **fails closed**: text before the first block, a whole answer with no
block, a player's GM NOTE or CHOICE, a whisper naming a role that does not exist (or no
one but the speaker) becomes a turn visible to ``[speaker, DM…]`` only, with
``needs_review=True`` and its original text, for the DM to look at. Nothing is dropped
except blank blocks and the code fences models like to wrap answers in.

Pure Python: no Django, deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from context_engine.visibility import Visibility

MAX_TAGS = 50
MAX_TAG_LENGTH = 100

PUBLIC_LABELS = frozenset({"PUBLIC", "NARRATION", "NARRATIVE", "ACTION", "CHOICE"})
_LABEL_KIND = {
    "PUBLIC": "public",
    "NARRATION": "public",
    "NARRATIVE": "public",
    "ACTION": "public",
    "WHISPER": "whisper",
    "GM NOTE": "gm_note",
    "MONOLOGUE": "monologue",
    "CHOICE": "choice",
}
DM_ALIASES = frozenset({"dm", "gm", "the dm", "the gm", "dungeon master", "game master"})

_DECOR = r"[#>*_`~\-\s]*"
_LABELS = r"PUBLIC|NARRATION|NARRATIVE|ACTION|WHISPER|GM[ _-]?NOTES?|MONOLOGUE|CHOICES?"
_HEADER = re.compile(
    rf"^{_DECOR}(?P<label>{_LABELS})\b"
    r"(?:[ \t]+TO[ \t]+(?P<to>[^:\n]*?))?"
    r"[ \t*_`]*:[ \t*_`]*(?P<rest>.*)$",
    re.IGNORECASE,
)
_TAGS = re.compile(rf"^{_DECOR}TAGS[ \t*_`]*:[ \t*_`]*(?P<rest>.*)$", re.IGNORECASE)
_HINGE = re.compile(
    rf"^{_DECOR}HINGE[ \t*_`]*(?::[ \t*_`]*(?P<rest>yes|true|no|false)?)?[ \t*_`.]*$",
    re.IGNORECASE,
)
_FENCE = re.compile(r"^\s*(```|~~~)[\w-]*\s*$")
_RECIPIENT_SPLIT = re.compile(r"\s*(?:,|;|&|/)\s*")
_AND = re.compile(r"\s+and\s+", re.IGNORECASE)


@dataclass(frozen=True)
class ParsedTurn:
    """One turn to store. ``visibility`` is ``None`` (public) or a sorted tuple of roles."""

    kind: str
    content: str
    visibility: Visibility
    tags: tuple[str, ...] = ()
    hinge: bool = False
    needs_review: bool = False
    label: str = ""  # the block's label as normalised ("PUBLIC", "WHISPER"…); "" for stray text
    line: int = 0  # 1-based line of the answer where this turn's text starts
    reason: str = ""  # why a turn failed closed


@dataclass
class _Block:
    label: str  # normalised label, "" for text outside any block
    to: str | None
    line: int
    raw: list[str]  # the lines as written (for review turns)
    body: list[str]
    tags: list[str]
    hinge: bool = False


def _normalise_label(label: str) -> str:
    upper = re.sub(r"[ _-]+", " ", label.upper())
    if upper.startswith("GM"):
        return "GM NOTE"
    if upper == "CHOICES":
        return "CHOICE"
    return upper


def _split_tags(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _blocks(text: str) -> tuple[_Block | None, list[_Block]]:
    """Split the answer into the stray text before any label and the labelled blocks."""
    stray: _Block | None = None
    blocks: list[_Block] = []
    pending_tags: list[str] = []
    pending_hinge = False
    for number, line in enumerate(text.splitlines(), start=1):
        if _FENCE.match(line):
            continue
        current = blocks[-1] if blocks else None
        header = _HEADER.match(line)
        if header:
            block = _Block(
                label=_normalise_label(header.group("label")),
                to=header.group("to"),
                line=number,
                raw=[line],
                body=[header.group("rest")],
                tags=pending_tags,
                hinge=pending_hinge,
            )
            pending_tags, pending_hinge = [], False
            blocks.append(block)
            continue
        tags = _TAGS.match(line)
        if tags:
            target = current.tags if current is not None else pending_tags
            target.extend(_split_tags(tags.group("rest")))
            if current is not None:
                current.raw.append(line)
            continue
        hinge = _HINGE.match(line)
        if hinge:
            value = (hinge.group("rest") or "yes").lower() in ("yes", "true")
            if current is not None:
                current.hinge = current.hinge or value
                current.raw.append(line)
            else:
                pending_hinge = pending_hinge or value
            continue
        if current is not None:
            current.raw.append(line)
            current.body.append(line)
        elif line.strip():
            if stray is None:
                stray = _Block(label="", to=None, line=number, raw=[], body=[], tags=[])
            stray.raw.append(line)
            stray.body.append(line)
        elif stray is not None:
            stray.raw.append(line)
            stray.body.append(line)
    return stray, blocks


def _clean_tags(tags: Iterable[str]) -> tuple[str, ...]:
    seen: list[str] = []
    for tag in tags:
        if tag and len(tag) <= MAX_TAG_LENGTH and tag not in seen:
            seen.append(tag)
    return tuple(seen[:MAX_TAGS])


def _resolve_recipients(
    to: str | None, *, speaker: str, roles: frozenset[str], dm_roles: tuple[str, ...]
) -> tuple[set[str], list[str]]:
    """Recipients named after "to" → (known roles, unknown names)."""
    by_lower = {role.lower(): role for role in roles}
    found: set[str] = set()
    unknown: list[str] = []
    names: list[str] = []
    for part in _RECIPIENT_SPLIT.split(to or ""):
        part = part.strip().strip("*_`\"'.!?()[]").strip()
        # "Thorin and Cassia" is two recipients, unless a role is really called that.
        known_whole = part.lower() in by_lower or part.lower().removeprefix("the ") in by_lower
        names.extend([part] if known_whole else _AND.split(part))
    for name in names:
        name = name.strip().strip("*_`\"'.!?()[]").strip()
        if not name:
            continue
        lower = name.lower()
        if lower.startswith("the ") and lower not in by_lower:
            lower = lower[4:]
        if lower in by_lower:
            found.add(by_lower[lower])
        elif lower in DM_ALIASES or f"the {lower}" in DM_ALIASES:
            if not dm_roles:
                unknown.append(name)
            found.update(dm_roles)
        else:
            unknown.append(name)
    return found, unknown


def _join(lines: list[str]) -> str:
    return "\n".join(lines).strip()


def parse_agent_output(
    text: str,
    *,
    speaker: str,
    speaker_kind: str,
    roles: Iterable[str],
    dm_roles: Iterable[str],
) -> list[ParsedTurn]:
    """Turns to store from one agent answer, in the order written.

    ``roles`` are the experiment's roles, ``dm_roles`` its DM-kind roles. Blank text gives
    ``[]`` (the caller decides what an empty answer means); any other text gives at least
    one turn, so nothing an agent wrote disappears.
    """
    known = frozenset(roles) | {speaker}
    dms = tuple(sorted(set(dm_roles) & known))
    is_dm = speaker_kind == "dm"
    public_kind = "narrative" if is_dm else "action"
    review_visibility = tuple(sorted({speaker, *dms}))

    def review(block_text: str, line: int, label: str, reason: str) -> ParsedTurn:
        return ParsedTurn(
            kind=public_kind,
            content=block_text,
            visibility=review_visibility,
            needs_review=True,
            label=label,
            line=line,
            reason=reason,
        )

    if not text or not text.strip():
        return []
    stray, blocks = _blocks(text)
    if not blocks:  # nothing in the format at all: one closed turn with all of it
        return [review(text.strip(), 1, "", "no labelled block")]
    turns: list[ParsedTurn] = []
    if stray is not None and _join(stray.raw):
        turns.append(review(_join(stray.raw), stray.line, "", "text outside any labelled block"))
    for block in blocks:
        content = _join(block.body)
        if not content:
            continue  # a label with nothing after it: nothing to store
        kind = _LABEL_KIND[block.label]
        tags, hinge = _clean_tags(block.tags), block.hinge
        raw = _join(block.raw)
        visibility: Visibility
        if kind == "public":
            kind, visibility = public_kind, None
        elif kind == "choice":
            if not is_dm:
                turns.append(review(raw, block.line, block.label, "only the DM offers choices"))
                continue
            visibility = None
        elif kind == "gm_note":
            if not is_dm or not dms:
                turns.append(review(raw, block.line, block.label, "only the DM writes GM notes"))
                continue
            visibility = dms
        elif kind == "monologue":
            visibility = (speaker,)
        else:  # whisper
            found, unknown = _resolve_recipients(
                block.to, speaker=speaker, roles=known, dm_roles=dms
            )
            if unknown:
                names = ", ".join(repr(n) for n in unknown)
                turns.append(review(raw, block.line, block.label, f"unknown recipient {names}"))
                continue
            if not is_dm:
                found.update(dms)  # the relay adds the DM when a player whispers
            found.discard(speaker)
            if not found:
                turns.append(review(raw, block.line, block.label, "a whisper to no one"))
                continue
            visibility = tuple(sorted({speaker, *found}))
        turns.append(
            ParsedTurn(
                kind=kind,
                content=content,
                visibility=visibility,
                tags=tags,
                hinge=hinge,
                label=block.label,
                line=block.line,
            )
        )
    if not turns:  # only labels with nothing after them: keep what was written, closed
        turns.append(review(text.strip(), 1, "", "no block had any text"))
    return turns
