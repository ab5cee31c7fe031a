"""The output leak guard (SPEC §4, issue 23 ask 6): does a model's answer quote, word for
word, text its audience cannot read?

Before the relay publishes an answer to an audience wider than its speaker, it builds a
`LeakGuard` from the texts that audience cannot read (GM notes, other agents' whispers and
monologues, secret goals, DM-only lore) and asks `check` for quotes. A quote is a run of
at least `WINDOW` consecutive words shared with one such text, compared after
normalisation (Unicode NFKC, case folded, punctuation and apostrophes ignored: "Maelis's
ledger," and "maelis s ledger" are the same words).

Why 8 words: two independently written English sentences almost never share eight words
in a row (n-gram studies put chance 8-gram overlap between unrelated documents near zero,
which is why 8- to 13-gram overlap is the usual test for copied text), while a leaked
clause of a GM note or a whisper is usually longer than that. Shorter runs match names and
stock phrases ("the gate at the end of the"); longer ones let a leak through with one
word changed every ten. Two rules keep stock phrasing out: a run must hold at least
`MIN_CONTENT_WORDS` distinct words that are not function words, and a run the audience
can already read elsewhere (``known``: public turns, readable lore, bios) is not a leak.

Pure and incremental: `LeakGuard` indexes the hidden texts once (a dict of word n-grams,
linear in their size); `check` is linear in the answer. `GuardStream` feeds a growing
answer chunk by chunk and says how much of it is safe to show (everything but the last
``WINDOW - 1`` words, which could still open a quote) until a quote is found — what a
streaming relay (issue 25) needs to show an answer only as it passes the guard.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

WINDOW = 8
MIN_CONTENT_WORDS = 3
# A word: letters and digits, with apostrophes inside ("don't", "Maelis’s") kept joined.
_WORD = re.compile(r"[^\W_]+(?:[’'ʼ][^\W_]+)*")
_APOSTROPHES = str.maketrans("", "", "’'ʼ")
_FUNCTION_WORDS = """a an the and or but nor so yet if then than that this these those there
    here of to in
    on at by for from with without into onto upon over under about above below after before
    as is are was were be been being am do does did done have has had having will would
    shall should can could may might must not no it its it's he him his she her hers they
    them their theirs we us our ours you your yours i me my mine who whom whose which what
    when where why how all any each every some such very just also only up down out off
    again once too more most other own same both few s t"""
# Words that make a run of text stock phrasing rather than content.
FUNCTION_WORDS = frozenset(_FUNCTION_WORDS.split())

Known = Callable[[Sequence[str]], bool]


def normalise(word: str) -> str:
    """One word as the guard compares it."""
    return unicodedata.normalize("NFKC", word).casefold().translate(_APOSTROPHES)


def words(text: str) -> list[tuple[str, int, int]]:
    """``(normalised word, start, end)`` for every word of ``text`` (offsets into it)."""
    found = []
    for match in _WORD.finditer(text):
        word = normalise(match.group())
        if word:
            found.append((word, match.start(), match.end()))
    return found


@dataclass(frozen=True)
class Hidden:
    """A text the output's audience cannot read. ``key`` names it for the record
    ("turn:12", "secret:Cassia", "lore:4"); ``label`` is what the DM is shown."""

    key: str
    label: str
    text: str


@dataclass(frozen=True)
class Quote:
    """A verbatim run: ``output[start:end]`` repeats ``source_text[source_start:source_end]``."""

    key: str
    label: str
    words: int
    start: int
    end: int
    source_start: int
    source_end: int
    phrase: tuple[str, ...]


class LeakGuard:
    """An index of hidden texts' word runs, asked about one answer at a time."""

    def __init__(self, hidden: Iterable[Hidden], *, window: int = WINDOW):
        if window < 2:
            raise ValueError("window must be at least 2 words")
        self.window = window
        self.hidden: list[Hidden] = []
        # n-gram -> ((source index, word position), ...): first position per source.
        self._index: dict[tuple[str, ...], tuple[tuple[int, int], ...]] = {}
        for item in hidden:
            self._add(item)

    def __bool__(self) -> bool:
        return bool(self._index)

    def _add(self, item: Hidden) -> None:
        number = len(self.hidden)
        self.hidden.append(item)
        seq = [w for w, _, _ in words(item.text)]
        n = self.window
        index = self._index
        seen: set[tuple[str, ...]] = set()
        for i in range(len(seq) - n + 1):
            gram = tuple(seq[i : i + n])
            if gram in seen:
                continue
            seen.add(gram)
            index[gram] = (*index.get(gram, ()), (number, i))

    def check(self, text: str, *, known: Known | None = None) -> list[Quote]:
        """Every maximal quoted run of ``text``, in order of where it starts.

        ``known(phrase)`` says whether the audience can already read that run of
        normalised words elsewhere; such a run is not a leak.
        """
        return _runs(self, words(text), known=known)

    def stream(self, *, known: Known | None = None) -> GuardStream:
        return GuardStream(self, known=known)


def _content_words(phrase: Sequence[str]) -> int:
    return len({w for w in phrase if w not in FUNCTION_WORDS and not w.isdigit()})


def _diagonals(guard: LeakGuard, normalised: list[str]) -> list[tuple[int, int, int, int]]:
    """Raw matched runs ``(source, first i, last i, p - i)``: output n-gram i matches the
    source's n-gram p, i+1 matches p+1, and so on along one diagonal."""
    n = guard.window
    open_runs: dict[tuple[int, int], list[int]] = {}  # (source, p - i) -> [first i, last i]
    finished: list[tuple[int, int, int, int]] = []
    for i in range(len(normalised) - n + 1):
        hits = guard._index.get(tuple(normalised[i : i + n]), ())
        current: dict[tuple[int, int], list[int]] = {}
        for source, p in hits:
            diagonal = (source, p - i)
            run = open_runs.get(diagonal)
            current[diagonal] = [run[0], i] if run is not None else [i, i]
        for diagonal, run in open_runs.items():
            if diagonal not in current:
                finished.append((diagonal[0], run[0], run[1], diagonal[1]))
        open_runs = current
    finished.extend((d[0], run[0], run[1], d[1]) for d, run in open_runs.items())
    return sorted(finished, key=lambda r: (r[1], r[0], r[3]))


def _runs(guard: LeakGuard, seq: list[tuple[str, int, int]], *, known: Known | None) -> list[Quote]:
    n = guard.window
    if len(seq) < n or not guard._index:
        return []
    normalised = [w for w, _, _ in seq]
    quotes: list[Quote] = []
    positions: dict[int, list[tuple[str, int, int]]] = {}
    for source, first, last, offset in _diagonals(guard, normalised):
        phrase = tuple(normalised[first : last + n])
        if _content_words(phrase) < MIN_CONTENT_WORDS:
            continue
        if known is not None and _all_known(phrase, n, known):
            continue
        item = guard.hidden[source]
        if source not in positions:
            positions[source] = words(item.text)
        src = positions[source]
        quotes.append(
            Quote(
                key=item.key,
                label=item.label,
                words=len(phrase),
                start=seq[first][1],
                end=seq[last + n - 1][2],
                source_start=src[first + offset][1],
                source_end=src[last + n - 1 + offset][2],
                phrase=phrase,
            )
        )
    return quotes


def _all_known(phrase: tuple[str, ...], n: int, known: Known) -> bool:
    """A run is known when every window of it is: a longer run that only *starts* with
    something public still carries hidden words."""
    if known(phrase):
        return True
    return all(known(phrase[i : i + n]) for i in range(len(phrase) - n + 1))


class PhraseIndex:
    """What an audience can already read, as a `known` predicate: the word n-grams of
    ``texts``, kept only where they are among ``wanted`` (the runs in question), so the
    index stays as small as the question however long the readable history is."""

    def __init__(self, texts: Iterable[str], *, wanted: Iterable[Sequence[str]], window: int):
        self.window = window
        grams = {tuple(g) for g in wanted}
        want = set()
        for gram in grams:
            want.update(tuple(gram[i : i + window]) for i in range(len(gram) - window + 1))
        self._found: set[tuple[str, ...]] = set()
        if not want:
            return
        for text in texts:
            seq = [w for w, _, _ in words(text)]
            for i in range(len(seq) - window + 1):
                gram = tuple(seq[i : i + window])
                if gram in want:
                    self._found.add(gram)

    def __call__(self, phrase: Sequence[str]) -> bool:
        n = self.window
        if len(phrase) < n:
            return False
        return all(tuple(phrase[i : i + n]) in self._found for i in range(len(phrase) - n + 1))


class GuardStream:
    """A growing answer, checked as it comes: `feed` returns the text newly safe to show.

    Safe means: no quote found so far, before the last ``window - 1`` complete words and
    the word still being written (a later chunk could make them a quote's start), and
    before any run that already matches a hidden text and is still growing (it may yet
    become a quote). Once a quote is found the stream is ``held`` and releases nothing
    more; `close` checks the last word and releases the tail of an answer that passed.
    Each feed rechecks the words so far: linear in the answer, the same rule as `check`.
    """

    def __init__(self, guard: LeakGuard, *, known: Known | None = None):
        self.guard = guard
        self.known = known
        self.text = ""
        self.shown = 0  # characters of `text` already released
        self.quotes: list[Quote] = []
        self._words: list[tuple[str, int, int]] = []
        self._scanned = 0  # characters tokenised into complete words

    @property
    def held(self) -> bool:
        return bool(self.quotes)

    def feed(self, chunk: str) -> str:
        self.text += chunk
        self._take_words(final=False)  # after a hold too: `quotes` ends up as `check`'s
        if self.held:
            return ""
        n = self.guard.window
        keep = n - 1
        safe = self._words[-keep][1] if len(self._words) >= keep else 0
        normalised = [w for w, _, _ in self._words]
        last = len(normalised) - n
        for _source, first, end, _offset in _diagonals(self.guard, normalised):
            if end == last:  # still growing at the newest words
                safe = min(safe, self._words[first][1])
        return self._release(safe)

    def close(self) -> str:
        """The end of the answer: check its last word and release the rest if it passed."""
        self._take_words(final=True)
        if self.held:
            return ""
        return self._release(len(self.text))

    def _take_words(self, *, final: bool) -> None:
        tail = self.text[self._scanned :]
        fresh = [(w, s + self._scanned, e + self._scanned) for w, s, e in words(tail)]
        if fresh and not final and fresh[-1][2] == len(self.text):
            fresh.pop()  # the last word may go on in the next chunk
        if fresh:
            self._words.extend(fresh)
            self._scanned = fresh[-1][2]
            self.quotes = _runs(self.guard, self._words, known=self.known)

    def _release(self, upto: int) -> str:
        if upto <= self.shown:
            return ""
        out = self.text[self.shown : upto]
        self.shown = upto
        return out
