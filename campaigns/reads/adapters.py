"""Model rows → the context engine's frozen dataclasses. No queries happen here.

Stored visibility is re-read with `parse_stored_visibility` (corrupt → DM-only), the same
rule the SQL side of `campaigns.reads.selectors` applies, so the engine's own filter agrees.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings

from campaigns.models import ContextEvent, Experiment, LoreEntry, Participant, Summary, Turn
from campaigns.models import WorldState as WorldStateModel
from campaigns.reads.precompiled import json_value
from campaigns.validation import effective_config
from context_engine.llm.factory import LLMSettings
from context_engine.types import (
    ContextEventView,
    DigestView,
    LoreView,
    PackConfig,
    ParticipantView,
    StateFieldView,
    TurnView,
    WorldStateView,
)
from context_engine.visibility import parse_stored_visibility


def llm_settings() -> LLMSettings:
    """The model backends configured in Django settings (read once from the environment)."""
    return LLMSettings(
        gemini_api_key=settings.GEMINI_API_KEY or None,
        gemini_base_url=settings.GEMINI_BASE_URL or None,
        openai_base_url=settings.OPENAI_BASE_URL or None,
        openai_api_key=settings.OPENAI_API_KEY or None,
        timeout_seconds=float(settings.LLM_TIMEOUT_SECONDS),
        cpu_timeout_seconds=float(settings.LLM_CPU_TIMEOUT_SECONDS),
    )


def pack_config(experiment: Experiment) -> PackConfig:
    return pack_config_from(experiment.config)


def pack_config_from(stored: object) -> PackConfig:
    """`pack_config` from the stored ``config`` value itself (the loader reads no model)."""
    config = effective_config(stored)
    return PackConfig(
        strategy=config["strategy"],
        budgets=tuple(config["budgets"].items()),
        hot_window_rounds=config["hot_window_rounds"],
        hinge_quota=config["hinge_quota"],
        hinge_ttl_rounds=config["hinge_ttl_rounds"],
        retrieval_preset=config["retrieval_preset"],
        lend_unused_budget=config["lend_unused_budget"],
        show_whisper_existence=config["show_whisper_existence"],
        window_turns=config["window_turns"],
        tier_budgets=tuple(sorted(config.get("tier_budgets", {}).items())),
    )


def turn_view(turn: Turn, dm_roles: tuple[str, ...] = ("DM",), *, redact: bool = False) -> TurnView:
    """A turn for the engine. ``redact`` keeps only its existence (no content, no tags)."""
    return TurnView(
        id=turn.pk,
        seq=turn.seq,
        round=turn.round,
        speaker=turn.speaker,
        kind=turn.kind,
        content="" if redact else turn.content,
        visibility=parse_stored_visibility(turn.visibility, dm_roles),
        tags=() if redact else tuple(turn.tags or ()),
        hinge=turn.hinge,
        tokens=0 if redact else turn.tokens,
    )


def turn_views(turns: Iterable[Turn], dm_roles: tuple[str, ...] = ("DM",)) -> tuple[TurnView, ...]:
    return tuple(turn_view(turn, dm_roles) for turn in turns)


# Views from rows are pure functions of (row, dm_roles), and the same rows come back in
# every pack (the window moves slowly, lore barely): a bounded memo skips the JSON decode
# and the dataclass build. Rows are tuples of plain values (JSON columns as text).
ROW_VIEWS_CACHED = 8192


def _memo_rows(build):
    """``build`` kept per row id, used again while the row and ``dm_roles`` are equal.

    Keyed by the id rather than the row: a row read again is a new tuple of new strings,
    and hashing it hashed its whole text (a pack's ~300 rows hold ~40,000 characters),
    where comparing it with the kept row is a memory compare. Emptied when full."""
    kept: dict[int, tuple[tuple, tuple[str, ...], object]] = {}

    def view(row: tuple, dm_roles: tuple[str, ...] = ("DM",)):
        found = kept.get(row[0])
        if found is not None and found[0] == row and found[1] == dm_roles:
            return found[2]
        built = build(row, dm_roles)
        if len(kept) >= ROW_VIEWS_CACHED:
            kept.clear()
        kept[row[0]] = (row, dm_roles, built)
        return built

    def views(rows: Iterable[tuple], dm_roles: tuple[str, ...] = ("DM",)) -> list:
        """``[view(row, dm_roles) for row in rows]`` in one call (a pack's ~300 rows)."""
        get = kept.get
        out = []
        append = out.append
        for row in rows:
            found = get(row[0])
            if found is not None and found[0] == row and found[1] == dm_roles:
                append(found[2])
            else:
                append(view(row, dm_roles))
        return out

    view.__doc__ = build.__doc__
    view.cache_clear = kept.clear
    view.many = views
    return view


@_memo_rows
def turn_view_row(row: tuple, dm_roles: tuple[str, ...] = ("DM",)) -> TurnView:
    """A turn for the engine from a `packs.TURN_COLUMNS` row."""
    id_, seq, round_, speaker, kind, content, visibility, tags, hinge, tokens = row
    return TurnView(
        id=id_,
        seq=seq,
        round=round_,
        speaker=speaker,
        kind=kind,
        content=content,
        visibility=parse_stored_visibility(json_value(visibility), dm_roles),
        tags=tuple(json_value(tags) or ()),
        hinge=bool(hinge),
        tokens=tokens,
    )


def stub_view_row(row: tuple, dm_roles: tuple[str, ...] = ("DM",)) -> TurnView:
    """A whisper's existence only, from a `packs.STUB_COLUMNS` row."""
    id_, seq, round_, speaker, kind, visibility, hinge = row
    return TurnView(
        id=id_,
        seq=seq,
        round=round_,
        speaker=speaker,
        kind=kind,
        content="",
        visibility=parse_stored_visibility(json_value(visibility), dm_roles),
        tags=(),
        hinge=bool(hinge),
        tokens=0,
    )


def participant_view(participant: Participant) -> ParticipantView:
    return ParticipantView(
        role=participant.role,
        kind=participant.kind,
        model=participant.model,
        bio=participant.bio,
        identity=participant.identity,
        secret=participant.secret,
        reveal_round=participant.reveal_round,
    )


def lore_view(entry: LoreEntry, dm_roles: tuple[str, ...] = ("DM",)) -> LoreView:
    return LoreView(
        id=entry.pk,
        term=entry.term,
        category=entry.category,
        definition=entry.definition,
        audience=parse_stored_visibility(entry.audience, dm_roles),
        status=entry.status,
        origin=entry.origin,
        locked=entry.locked,
        first_seen_round=entry.first_seen_round,
        last_seen_round=entry.last_seen_round,
        mention_count=entry.mention_count,
        valid_from_round=entry.valid_from_round,
        invalid_from_round=entry.invalid_from_round,
    )


@_memo_rows
def lore_view_row(row: tuple, dm_roles: tuple[str, ...] = ("DM",)) -> LoreView:
    """`lore_view` from a `packs.LORE_COLUMNS` row."""
    (id_, term, category, definition, audience, status, origin, locked, first_seen,
     last_seen, mentions, valid_from, invalid_from) = row  # fmt: skip
    return LoreView(
        id=id_,
        term=term,
        category=category,
        definition=definition,
        audience=parse_stored_visibility(json_value(audience), dm_roles),
        status=status,
        origin=origin,
        locked=bool(locked),
        first_seen_round=first_seen,
        last_seen_round=last_seen,
        mention_count=mentions,
        valid_from_round=valid_from,
        invalid_from_round=invalid_from,
    )


def digest_view_row(row: tuple | None, dm_roles: tuple[str, ...] = ("DM",)) -> DigestView | None:
    """`digest_view` from a `packs.SUMMARY_COLUMNS` row (source ids not loaded)."""
    if row is None:
        return None
    _kind, audience, round_from, round_to, text, sections, method, version = row
    return DigestView(
        audience=parse_stored_visibility(json_value(audience), dm_roles),
        round_from=round_from,
        round_to=round_to,
        text=text,
        sections=tuple((str(h), str(b)) for h, b in (json_value(sections) or ())),
        method=method,
        version=version,
        source_turn_ids=(),
    )


def digest_view(summary: Summary | None, dm_roles: tuple[str, ...] = ("DM",)) -> DigestView | None:
    if summary is None:
        return None
    return DigestView(
        audience=parse_stored_visibility(summary.audience, dm_roles),
        round_from=summary.round_from,
        round_to=summary.round_to,
        text=summary.text,
        sections=tuple((str(h), str(b)) for h, b in (summary.sections or ())),
        method=summary.method,
        version=summary.version,
        source_turn_ids=(
            ()
            if "source_turn_ids" in summary.get_deferred_fields()
            else tuple(summary.source_turn_ids or ())
        ),
    )


def world_state_view(state: WorldStateModel | None) -> WorldStateView:
    if state is None:
        return WorldStateView()
    return world_state_view_from(state.flags, state.fields, state.last_updated_round)


def world_state_view_from(flags: object, state_fields: object, last_updated_round: int):
    """`world_state_view` from the stored values (decoded JSON) of a WorldState row."""
    state_fields = state_fields or {}
    fields = []
    for name in sorted(state_fields):
        raw = state_fields[name]
        if isinstance(raw, dict):
            fields.append(
                StateFieldView(
                    name=name,
                    value=str(raw.get("value", "")),
                    mutations=int(raw.get("mutations", 1) or 1),
                    last_mutated_round=int(raw.get("last_mutated_round", 0) or 0),
                    audience=(
                        parse_stored_visibility(raw["audience"]) if raw.get("audience") else None
                    ),
                )
            )
        else:
            fields.append(StateFieldView(name=name, value=str(raw)))
    flag_items = tuple(sorted((str(k), bool(v)) for k, v in (flags or {}).items()))
    return WorldStateView(
        flags=flag_items, fields=tuple(fields), last_updated_round=last_updated_round
    )


def event_view_row(row: tuple) -> ContextEventView:
    """`event_view` from a ``(command, round, seq, cleared_without_checkpoint)`` row."""
    command, round_, seq, cleared = row
    return ContextEventView(
        command=command, round=round_, seq=seq, cleared_without_checkpoint=bool(cleared)
    )


def event_view(event: ContextEvent) -> ContextEventView:
    return ContextEventView(
        command=event.command,
        round=event.round,
        seq=event.seq,
        cleared_without_checkpoint=event.cleared_without_checkpoint,
    )
