"""Memory: the cold-layer digest, milestones, monologue summaries and lore extraction.

Pure functions over ``context_engine.types``; the Celery tasks in ``campaigns`` fetch
rows, call these, and store the results.
"""

from context_engine.memory.digest import (
    DIGEST_SCHEMA,
    FALLBACK_MODEL,
    OFFLINE_MODEL,
    DigestResult,
    draft_digest,
    fallback_digest,
    make_digest,
)
from context_engine.memory.extraction import (
    Candidate,
    define_term,
    extract_candidates,
    mentions,
    merge_key,
    recurring_phrases,
    sentences_mentioning,
)
from context_engine.memory.lore import (
    TermDefinition,
    define_from_sources,
    lore_audience,
    readable_by_audience,
    usable_sources,
)
from context_engine.memory.milestones import detect_milestones
from context_engine.memory.monologues import condense_monologues
from context_engine.memory.template import parse_digest, render_digest
from context_engine.memory.vocabulary import guess_category

__all__ = [
    "DIGEST_SCHEMA",
    "FALLBACK_MODEL",
    "OFFLINE_MODEL",
    "Candidate",
    "DigestResult",
    "TermDefinition",
    "condense_monologues",
    "define_from_sources",
    "define_term",
    "detect_milestones",
    "draft_digest",
    "extract_candidates",
    "fallback_digest",
    "guess_category",
    "lore_audience",
    "make_digest",
    "mentions",
    "merge_key",
    "parse_digest",
    "readable_by_audience",
    "recurring_phrases",
    "render_digest",
    "sentences_mentioning",
    "usable_sources",
]
