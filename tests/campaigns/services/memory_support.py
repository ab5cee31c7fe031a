"""Shared helpers for the memory tests: model settings for the stand-ins, leak detection.

Leak detection is by text that exists *only* where a role may not look: every run of
``NGRAM`` words of a turn the role cannot read (or of another participant's secret)
that appears nowhere the role may read is a fingerprint. None of those fingerprints
may show up in the role's digests, summaries, lore or pack.
"""

from __future__ import annotations

import re

from campaigns.models import Experiment
from campaigns.reads.selectors import (
    lore_visible_to,
    summaries_visible_to,
    turns_visible_to,
    viewer_for_role,
)

NGRAM = 4
_WORD = re.compile(r"[a-z0-9][a-z0-9'’-]*")


def use_gemini(settings, standin) -> None:
    """Route every model call of the memory services to ``standin``; retry fast."""
    settings.GEMINI_API_KEY = "standin-key"
    settings.GEMINI_BASE_URL = standin.base_url
    settings.LLM_TIMEOUT_SECONDS = 2
    settings.BABEL_LLM_RETRY_BASE_DELAY = 0.01


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def ngrams(text: str, n: int = NGRAM) -> set[tuple[str, ...]]:
    tokens = words(text)
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


def artifacts_for(experiment: Experiment, role: str, *, with_pack: bool = True) -> dict[str, str]:
    """Every derived text ``role`` receives: digests, summaries, lore, and its pack."""
    viewer = viewer_for_role(experiment=experiment, role=role)
    texts: dict[str, str] = {}
    for summary in summaries_visible_to(experiment=experiment, viewer=viewer):
        texts[f"summary {summary.pk} ({summary.kind} {summary.audience})"] = summary.text
    for entry in lore_visible_to(experiment=experiment, viewer=viewer):
        texts[f"lore {entry.pk} {entry.term!r}"] = f"{entry.term}: {entry.definition}"
    if with_pack:
        from campaigns.services.context import pack_for_role

        pack = pack_for_role(experiment=experiment, role=role)
        texts["pack"] = "\n".join(section.text for section in pack.sections)
    return texts


def fingerprints_hidden_from(experiment: Experiment, role: str) -> dict[tuple[str, ...], str]:
    """n-grams found only in turns or secrets ``role`` may not read → where they come from."""
    viewer = viewer_for_role(experiment=experiment, role=role)
    readable = turns_visible_to(experiment=experiment, viewer=viewer)
    readable_ids = set(readable.values_list("pk", flat=True))
    known: set[tuple[str, ...]] = set()
    for turn in readable:
        known |= ngrams(turn.content)
    known |= ngrams(experiment.hook) | ngrams(experiment.rules)
    hidden: dict[tuple[str, ...], str] = {}
    for participant in experiment.participants.all():
        known |= ngrams(participant.bio) | ngrams(participant.identity)
        if participant.role == role:
            known |= ngrams(participant.secret)
    for participant in experiment.participants.exclude(role=role):
        for gram in ngrams(participant.secret) - known:
            hidden[gram] = f"secret of {participant.role}"
    for turn in experiment.turns.exclude(pk__in=readable_ids):
        for gram in ngrams(turn.content) - known:
            hidden.setdefault(gram, f"turn #{turn.seq} ({turn.kind} {turn.visibility})")
    return hidden


def leaks(experiment: Experiment, role: str, *, with_pack: bool = True) -> list[str]:
    """Human-readable leak findings for ``role`` (empty when there are none)."""
    hidden = fingerprints_hidden_from(experiment, role)
    found = []
    for name, text in artifacts_for(experiment, role, with_pack=with_pack).items():
        for gram in ngrams(text) & hidden.keys():
            found.append(f"{name} contains {' '.join(gram)!r} from {hidden[gram]}")
    return sorted(found)
