"""Load an experiment for the Arena: five queries, whatever its length."""

from __future__ import annotations

from campaigns.models import Experiment, Fact, Participant, Question
from campaigns.reads import adapters, selectors
from campaigns.validation import effective_config
from context_engine.arena import (
    FactView,
    History,
    ModelJudge,
    OfflineJudge,
    QuestionView,
    derive_facts,
)
from context_engine.llm.factory import ProviderNotConfigured, client_for
from context_engine.visibility import parse_stored_visibility

MIN_DIGEST_TOKENS = 200
MAX_DIGEST_TOKENS = 1500  # the same cap the summarizer uses (services.memory.digests)


def history_for(*, experiment: Experiment) -> History:
    """The whole campaign as the engine's dataclasses (participants, turns, lore)."""
    participants = list(experiment.participants.order_by("order", "id"))
    dms = tuple(sorted(p.role for p in participants if p.kind == Participant.Kind.DM)) or ("DM",)
    turns = list(
        selectors.turns_visible_to(experiment=experiment, viewer=selectors.OMNISCIENT).defer(
            "created_at"
        )
    )
    lore = selectors.lore_visible_to(experiment=experiment, viewer=selectors.OMNISCIENT).defer(
        "created_at", "updated_at"
    )
    config = effective_config(experiment.config)
    digest_budget = int(config["budgets"].get("digest", 2000))
    return History(
        participants=tuple(adapters.participant_view(p) for p in participants),
        turns=adapters.turn_views(turns, dms),
        lore=tuple(adapters.lore_view(entry, dms) for entry in lore.order_by("id")),
        hook=experiment.hook,
        rules=experiment.rules,
        config=adapters.pack_config(experiment),
        memory_interval=int(config["memory_interval"]),
        digest_tokens=max(MIN_DIGEST_TOKENS, min(MAX_DIGEST_TOKENS, digest_budget)),
        review_turn_ids=frozenset(t.pk for t in turns if t.needs_review),
    )


def fact_view(fact: Fact, dms: tuple[str, ...] = ("DM",)) -> FactView:
    return FactView(
        id=fact.key,
        round=fact.round,
        audience=parse_stored_visibility(fact.audience, dms),
        answer=tuple(str(a) for a in fact.answer or ()),
        question=fact.question,
    )


def facts_for(*, experiment: Experiment, history: History) -> tuple[tuple[FactView, ...], str]:
    """(facts, source): the planted facts, or — when none are declared — derived ones."""
    dms = tuple(sorted(p.role for p in history.participants if p.kind == "dm")) or ("DM",)
    stored = selectors.facts_visible_to(experiment=experiment, viewer=selectors.OMNISCIENT)
    facts = tuple(fact_view(f, dms) for f in stored.order_by("position", "id"))
    if facts:
        return facts, "declared"
    derived = derive_facts(
        turns=history.turns, lore=history.lore, participants=history.participants
    )
    return derived, "derived"


def question_view(question: Question) -> QuestionView:
    return QuestionView(
        question=question.question,
        answer=question.answer,
        evidence=tuple(int(i) for i in question.evidence or ()),
        category=question.category,
        asked_at_round=question.asked_at_round,
        role=question.role or None,
    )


def questions_for(*, experiment: Experiment) -> tuple[QuestionView, ...]:
    """The experiment's evidence-recall questions (none: the Arena scores facts only)."""
    return tuple(question_view(q) for q in selectors.question_list(experiment=experiment))


def judge_for(name: str, *, sleep=None):
    """``offline`` or a model id (`client_for`); a model with no backend configured is the
    offline judge, and its note says so."""
    if name in ("", "offline"):
        return OfflineJudge()
    try:
        client = client_for(name, adapters.llm_settings())
    except ProviderNotConfigured as exc:  # known, but not reachable from this process
        judge = OfflineJudge()
        judge.stats.fallback_reason = f"{name}: no model backend configured ({exc})"
        return judge  # an unknown id stays a ValueError for the caller
    kwargs = {"sleep": sleep} if sleep is not None else {}
    return ModelJudge(client, **kwargs)
