"""An agent's answer split into its parts while the model is still writing it (issue 25).

`parse_agent_output` reads a whole answer; a streaming relay must know, for every piece
of text as it arrives, which part (block) it belongs to and so who may read it.
`AnswerSplit.feed` takes the model's chunks and returns `Part` openings and `Text`
pieces; a part's audience is decided by `parse_agent_output` itself on the part's
header line, so the stream and the stored turns can never disagree about it.

The start of a line is the only undecided text: until it is known not to open a block
(a label and its colon), not to be a ``TAGS``/``HINGE`` modifier and not a code fence,
it is held back — given to no one — and released to the right part once decided. Text
before any block is its own part, closed to ``[speaker, DM…]`` for review, as the
parser stores it.

Pure Python, deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from context_engine.agent_output import _FENCE, _HEADER, _HINGE, _TAGS, parse_agent_output
from context_engine.visibility import Visibility

_DECOR = re.compile(r"^[#>*_`~\-\s]*")
_WORDS = ["PUBLIC", "NARRATION", "NARRATIVE", "ACTION", "WHISPER", "MONOLOGUE", "CHOICE"]
_WORDS += ["CHOICES", "TAGS", "HINGE"]
_WORDS += [f"GM{sep}NOTE{s}" for sep in ("", " ", "_", "-") for s in ("", "S")]
_AFTER_LABEL = re.compile(r"[ \t*_`]*")
_AFTER_TO = re.compile(r"[ \t]+(?:T(?:O(?:[ \t]+[^:\n]*)?)?)?", re.IGNORECASE)
_MODIFIER_REST = re.compile(r"[ \t*_`]*:.*")
_FENCE_START = re.compile(r"\s*(?:`{1,3}|~{1,3})[\w-]*\s*")


@dataclass(frozen=True)
class Part:
    """A part (block) of the answer opens: what the parser would store it as."""

    index: int
    kind: str
    visibility: Visibility
    needs_review: bool
    label: str


@dataclass(frozen=True)
class Text:
    """New text of part ``index``."""

    index: int
    text: str


def could_open_block(partial: str) -> bool:
    """Whether an unfinished line could still become a label line, a modifier or a fence."""
    if _FENCE_START.fullmatch(partial):
        return True
    rest = partial[_DECOR.match(partial).end() :]
    if not rest:
        return True
    upper = rest.upper()
    for word in _WORDS:
        if word.startswith(upper):
            return True
        if upper.startswith(word):
            after = rest[len(word) :]
            if _AFTER_LABEL.fullmatch(after) or _AFTER_TO.fullmatch(after):
                return True
            if word in ("TAGS", "HINGE") and _MODIFIER_REST.fullmatch(after):
                return True  # a modifier line: undecided (given to no one) to its end
    return False


class AnswerSplit:
    """Feed the model's chunks; get the parts they open and the text each part gains."""

    def __init__(
        self, *, speaker: str, speaker_kind: str, roles: Iterable[str], dm_roles: Iterable[str]
    ):
        self.speaker = speaker
        self.speaker_kind = speaker_kind
        self.roles = tuple(roles)
        self.dm_roles = tuple(dm_roles)
        self.parts: list[Part] = []
        self._line = ""  # the current, unfinished line
        self._mode: str | None = None  # None: undecided; "text": released as it comes
        self._released = 0  # characters of the line already released
        self._current: Part | None = None
        self._written: dict[int, bool] = {}  # part index -> has text

    def _parse_one(self, text: str) -> Part:
        turns = parse_agent_output(
            text,
            speaker=self.speaker,
            speaker_kind=self.speaker_kind,
            roles=self.roles,
            dm_roles=self.dm_roles,
        )
        turn = turns[0]
        return Part(
            index=len(self.parts),
            kind=turn.kind,
            visibility=turn.visibility,
            needs_review=turn.needs_review,
            label=turn.label,
        )

    def _open(self, header_line: str | None, out: list) -> None:
        # The header with a stand-in body: the parser decides kind and audience. Stray
        # text (no header) is what the parser makes of a line outside any block.
        part = self._parse_one(f"{header_line}\nx" if header_line is not None else "x")
        self.parts.append(part)
        self._current = part
        out.append(part)

    def _emit(self, text: str, out: list) -> None:
        if not text:
            return
        if self._current is None:
            if not text.strip():
                return  # blank lines before anything: nothing the parser keeps
            self._open(None, out)
        index = self._current.index
        if not self._written.get(index):
            text = text.lstrip()
            if not text:
                return
            self._written[index] = True
        out.append(Text(index, text))

    def feed(self, chunk: str) -> list[Part | Text]:
        out: list[Part | Text] = []
        while chunk:
            newline = chunk.find("\n")
            if newline < 0:
                self._line += chunk
                chunk = ""
                self._partial(out)
            else:
                self._line += chunk[:newline]
                chunk = chunk[newline + 1 :]
                self._finish_line(out)
        return out

    def close(self) -> list[Part | Text]:
        out: list[Part | Text] = []
        if self._line or self._mode is not None:
            self._finish_line(out)
        return out

    def _separator(self) -> str:
        """Lines after a part's first are joined with a newline, as the parser joins them."""
        if self._current is not None and self._written.get(self._current.index):
            return "\n"
        return ""

    def _partial(self, out: list) -> None:
        line = self._line
        if self._mode == "text":
            self._emit(line[self._released :], out)
            self._released = len(line)
            return
        header = _HEADER.match(line)
        if header is not None and header.start("rest") == len(line):
            return  # the label's decoration ("**PUBLIC:**") may not be over yet
        if header is not None:
            self._open(line[: header.start("rest")], out)
            self._mode, self._released = "text", header.start("rest")
            self._emit(line[self._released :], out)
            self._released = len(line)
        elif not could_open_block(line):
            self._mode = "text"
            separator = self._separator()
            self._released = 0
            self._emit(separator + line if self._current is not None else line, out)
            self._released = len(line)

    def _finish_line(self, out: list) -> None:
        line = self._line
        if self._mode == "text":
            self._emit(line[self._released :], out)
        elif _FENCE.match(line):
            pass
        elif (header := _HEADER.match(line)) is not None:
            self._open(line[: header.start("rest")], out)
            self._emit(header.group("rest"), out)
        elif _TAGS.match(line) or _HINGE.match(line):
            pass  # modifiers of the block: not text
        else:
            self._emit(self._separator() + line if self._current is not None else line, out)
        self._line, self._mode, self._released = "", None, 0
