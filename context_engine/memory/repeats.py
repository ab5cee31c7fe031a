"""Stock lines: a speaker saying nearly the same sentence again is not a second use.

Agent players repeat themselves ("Garrick rubs the cowrie shell at his throat for
luck", round after round), so a phrase inside such a line recurs without being a
coinage (issue 22, ask 6). A lowercase phrase's uses are therefore counted as the
distinct *contexts* it appears in: the speaker and the other content words of the
sentence. A use whose context is near-identical to an earlier one of the same speaker
adds nothing; another speaker, or the same speaker saying something else, does.
"""

from __future__ import annotations

import re

from context_engine.memory.vocabulary import STOPWORDS, singular

MAX_CONTEXTS = 4  # enough for every admission threshold; a statistics row keeps no more
SAME_LINE = 0.5  # word overlap (Jaccard) from which two sentences are one stock line
_SIGNATURE_WORDS = 16
_WORD = re.compile(r"[a-z]{3,}")

Context = tuple[int, str]  # (turn id, "speaker|sorted content words")


def context_of(sentence: str, phrase: str, speaker: str) -> str:
    """``speaker|words``: the sentence's content words around ``phrase``, sorted."""
    own = {singular(word) for word in _WORD.findall(phrase.lower())}
    words = {
        singular(word)
        for word in _WORD.findall(sentence.lower())
        if word not in STOPWORDS and singular(word) not in own
    }
    return f"{speaker}|{' '.join(sorted(words)[:_SIGNATURE_WORDS])}"


def _same_line(a: str, b: str) -> bool:
    speaker_a, _, words_a = a.partition("|")
    speaker_b, _, words_b = b.partition("|")
    if speaker_a != speaker_b:
        return False
    left, right = set(words_a.split()), set(words_b.split())
    union = left | right
    return not union or len(left & right) / len(union) >= SAME_LINE


def with_context(contexts: tuple[Context, ...], turn_id: int, context: str) -> tuple[Context, ...]:
    """``contexts`` plus this use, unless it repeats one of them (or enough are known)."""
    if len(contexts) >= MAX_CONTEXTS or any(_same_line(c, context) for _, c in contexts):
        return contexts
    return (*contexts, (turn_id, context))
