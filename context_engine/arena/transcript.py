"""A transcript dict (``babel-transcript/1``) straight into a `History` and facts.

For the generator's benchmarks and engine tests, with no database: turn ids and seqs
are the turns' 1-based positions, lore ids their 1-based positions, and a question's
evidence keys become the ids of the turns with those keys. The Django side
loads a stored experiment with `campaigns.services.arena.history_for` instead.
"""

from __future__ import annotations

from typing import Any

from context_engine.arena.facts import FactView
from context_engine.arena.recall import QuestionView
from context_engine.arena.replay import History
from context_engine.types import LoreView, PackConfig, ParticipantView, TurnView


def _vis(value: Any):
    return None if value is None else tuple(sorted(value))


def history_from_transcript(
    data: dict[str, Any], config: PackConfig | None = None
) -> tuple[History, tuple[FactView, ...]]:
    participants = tuple(
        ParticipantView(
            role=p["role"],
            kind=p.get("kind", "player"),
            model=p.get("model", "human"),
            bio=p.get("bio", ""),
            identity=p.get("identity", ""),
            secret=p.get("secret", ""),
            reveal_round=p.get("reveal_round"),
        )
        for p in sorted(data["participants"], key=lambda p: p.get("order", 0))
    )
    turns = tuple(
        TurnView(
            id=i + 1,
            seq=i + 1,
            round=t["round"],
            speaker=t["speaker"],
            kind=t["kind"],
            content=t["content"],
            visibility=_vis(t.get("visibility")),
            tags=tuple(t.get("tags") or ()),
            hinge=bool(t.get("hinge")),
        )
        for i, t in enumerate(data["turns"])
    )
    lore = tuple(
        LoreView(
            id=i + 1,
            term=e["term"],
            category=e.get("category", "term"),
            definition=e.get("definition", ""),
            audience=_vis(e.get("audience")),
            status=e.get("status", "proposed"),
            origin=e.get("origin", "extracted"),
            locked=bool(e.get("locked")),
            first_seen_round=e.get("first_seen_round", 0),
            last_seen_round=e.get("last_seen_round", 0),
            mention_count=e.get("mention_count", 1),
            valid_from_round=e.get("valid_from_round"),
            invalid_from_round=e.get("invalid_from_round"),
        )
        for i, e in enumerate(data.get("lore") or ())
    )
    facts = tuple(
        FactView(
            id=f["id"],
            round=f["round"],
            audience=_vis(f.get("audience")),
            answer=tuple(f["answer"]),
            question=f["question"],
        )
        for f in data.get("facts") or ()
    )
    experiment = data.get("experiment") or {}
    history = History(
        participants=participants,
        turns=turns,
        lore=lore,
        hook=experiment.get("hook", ""),
        rules=experiment.get("rules", ""),
        config=config or PackConfig(),
    )
    return history, facts


def questions_from_transcript(
    data: dict[str, Any], items: list | None = None
) -> tuple[QuestionView, ...]:
    """The transcript's ``questions`` (or ``items``, questions over its turn keys).

    Only what the replay needs is checked here (a ValueError naming the field: an
    evidence key no turn has, an unknown role); the importer validates the rest.
    """
    ids = {t["key"]: i + 1 for i, t in enumerate(data["turns"]) if t.get("key")}
    roles = {p["role"] for p in data["participants"]}
    out = []
    if items is None:
        items = data.get("questions") or []
    for n, q in enumerate(items):
        evidence = []
        for k, key in enumerate(q["evidence"]):
            if key not in ids:
                raise ValueError(f"questions[{n}].evidence[{k}]: No turn has this key.")
            evidence.append(ids[key])
        role = q.get("role")
        if role is not None and role not in roles:
            raise ValueError(f"questions[{n}].role: {role!r} is not a participant's role.")
        out.append(
            QuestionView(
                question=q["question"],
                answer=q["answer"],
                evidence=tuple(evidence),
                category=q["category"],
                asked_at_round=q["asked_at_round"],
                role=role,
            )
        )
    return tuple(out)
