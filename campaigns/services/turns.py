"""Write services for turns: validation, seq assignment, cached token counts."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from campaigns.models import Experiment, Turn
from campaigns.reads import packs
from campaigns.reads.selectors import is_editor
from campaigns.services import live_turns
from campaigns.services.memory import commands as memory_commands
from campaigns.services.reveals import secrets_reveal_due
from campaigns.validation import (
    clean_content,
    clean_kind,
    clean_round,
    clean_speaker,
    clean_tags,
    clean_visibility,
    max_content_chars,
)
from context_engine import tokens


def turn_fields(
    *,
    roles: set[str],
    round: object,
    speaker: object,
    kind: object,
    content: object,
    visibility: object = None,
    tags: object = None,
    hinge: object = False,
    content_limit: int,
    dm_roles: tuple[str, ...] = (),
    count_tokens: bool = True,
) -> dict:
    """Validate one turn's fields; returns them cleaned, token count included.

    ``count_tokens=False`` leaves ``tokens`` out (the importer counts a whole batch at once).
    """
    if not isinstance(hinge, bool):
        raise ValidationError({"hinge": ["Hinge must be true or false."]})
    cleaned = {
        "round": clean_round(round),
        "speaker": clean_speaker(speaker, roles),
        "kind": clean_kind(kind),
        "content": clean_content(content, limit=content_limit),
        "visibility": clean_visibility(visibility, roles),
        "tags": clean_tags(tags),
        "hinge": hinge,
    }
    cleaned["visibility"] = private_kinds(cleaned, dm_roles)
    if count_tokens:
        cleaned["tokens"] = tokens.count(cleaned["content"])
    return cleaned


def private_kinds(cleaned: dict, dm_roles: tuple[str, ...]) -> list[str] | None:
    """Kinds that are private by nature (SPEC §4) never default to public.

    A monologue is its speaker's only; a GM note defaults to the DM; a whisper defaults to
    its sender and the DM. An explicit audience that breaks these rules is a 400.
    """
    kind, speaker, visibility = cleaned["kind"], cleaned["speaker"], cleaned["visibility"]
    if kind == "monologue":
        if visibility not in (None, [speaker]):
            raise ValidationError({"visibility": ["A monologue is visible to its speaker only."]})
        return [speaker]
    if kind in ("gm_note", "whisper") and visibility is None and not dm_roles:
        raise ValidationError(
            {"visibility": [f"This experiment has no DM: give the {kind} an explicit audience."]}
        )
    if kind == "gm_note" and visibility is None:
        return sorted(dm_roles)
    if kind == "whisper":
        if visibility is None:
            return sorted({speaker, *dm_roles})
        if len(visibility) < 2 and visibility == [speaker]:
            raise ValidationError({"visibility": ["A whisper needs at least one recipient."]})
    return visibility


def may_move_clock(*, user, experiment: Experiment) -> bool:
    """The one rule for rounds, for every person's write path (API, composer, GM-notes
    form, whispers form): a person writes into the open round only, unless they are the
    campaign's owner or staff. A turn in a later round opens that round (secret goals due
    by then become readable); one in an earlier round back-dates the log. So a player, a
    judge or a user seated as the DM posts only into the open round; `relay.human_turn_create`
    and `notes.note_create` apply this, and `turn_create` enforces it under the row lock.
    The relay and imports are the DM side's own machinery and call `turn_create` directly.
    """
    return is_editor(user=user, experiment=experiment)


@transaction.atomic
def turn_create(
    *,
    experiment: Experiment,
    round: int | None = None,
    speaker: str,
    kind: str,
    content: str,
    visibility: list[str] | None = None,
    tags: list[str] | None = None,
    hinge: bool = False,
    needs_review: bool = False,
    open_round_only: bool = False,
    held: bool = False,
) -> Turn:
    """Store one turn with the next seq. Locks the experiment row to serialise seqs.

    ``round`` omitted means the open round (the campaign clock). A turn in a later round
    opens that round: only the DM side (owner, staff, the relay) may move the clock, so a
    person's post passes ``open_round_only`` (`may_move_clock`) and any other round is a
    400 naming ``round``. ``held``: the output guard holds it for the DM's review
    (`holds.turn_hold`).
    """
    locked = Experiment.objects.select_for_update().get(pk=experiment.pk)
    if round is None:
        round = locked.current_round
    elif open_round_only and round != locked.current_round:
        raise ValidationError(
            {"round": [f"Round {locked.current_round} is open: post into it (or omit round)."]}
        )
    participants = list(locked.participants.values_list("role", "kind"))
    roles = {role for role, _ in participants}
    dm_roles = tuple(sorted(role for role, kind in participants if kind == "dm"))
    cleaned = turn_fields(
        roles=roles,
        dm_roles=dm_roles,
        round=round,
        speaker=speaker,
        kind=kind,
        content=content,
        visibility=visibility,
        tags=tags,
        hinge=hinge,
        content_limit=max_content_chars(locked.config),
    )
    last = locked.turns.aggregate(seq=Max("seq"), round=Max("round"))
    # Past a deleted newest turn's seq too: the pack's caches take every turn past the
    # seqs they have seen for an append (`packs.newest_logged_seq`).
    newest = max(last["seq"] or 0, packs.newest_logged_seq(locked.pk))
    turn = Turn.objects.create(
        experiment=locked,
        seq=newest + 1,
        needs_review=needs_review,
        held_at=timezone.now() if held else None,
        **cleaned,
    )
    if turn.round > locked.current_round:
        Experiment.objects.filter(pk=locked.pk).update(current_round=turn.round)
        experiment.current_round = turn.round
        secrets_reveal_due(experiment_id=locked.pk, round_now=turn.round)  # ask 7: re-derive
    # Memory work (hydrator; summarizer when a round just finished) runs after commit.
    memory_commands.after_turn_created(turn=turn, previous_round=last["round"])
    live_turns.announce(turn)  # its readers' open pages refresh after commit
    return turn
