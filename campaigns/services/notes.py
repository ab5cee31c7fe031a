"""GM notes written, corrected and withdrawn by the DM in the console.

A note is a `Turn` of kind ``gm_note``. Creating one is `turn_create`. Editing or
deleting one never loses data: the earlier text goes into a `TurnRevision` (a delete
keeps the whole snapshot there, for the admin), and whatever was derived from the old
text is re-derived:

- digests that folded the note are rewound to the version before it and folded again
  (after commit, in the worker), so the old words leave the cold layer;
- extracted, unlocked lore sourced only from the note is rejected (with a revision),
  and an edited note is hydrated again.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from campaigns.models import Experiment, LoreEntry, LoreRevision, Summary, Turn, TurnRevision
from campaigns.services import live_turns
from campaigns.services.dispatch import send_on_commit
from campaigns.services.lore import actor_for
from campaigns.services.turns import may_move_clock, turn_create
from campaigns.validation import clean_content, max_content_chars
from context_engine import tokens


def note_create(
    *,
    experiment: Experiment,
    user,
    speaker: str,
    round: int | None = None,
    content: str,
    visibility=None,
) -> Turn:
    """A new GM note (DM-only unless an audience is given), by ``user``: into the open
    round (``round`` omitted) or, for the owner and staff only, any round
    (`may_move_clock`); a user seated as the DM naming another round gets a 400 on
    ``round`` and nothing is stored."""
    return turn_create(
        experiment=experiment,
        round=round,
        speaker=speaker,
        kind=Turn.Kind.GM_NOTE,
        content=content,
        visibility=visibility,
        open_round_only=not may_move_clock(user=user, experiment=experiment),
    )


def _locked_note(turn: Turn) -> Turn:
    note = Turn.objects.select_for_update().filter(pk=turn.pk, kind=Turn.Kind.GM_NOTE).first()
    if note is None:
        raise ValidationError({"note": ["This GM note no longer exists."]})
    return note


def record_revision(note: Turn, *, user, action: str, new_content: str = "") -> TurnRevision:
    return TurnRevision.objects.create(
        experiment_id=note.experiment_id,
        turn=note if action == TurnRevision.Action.EDIT else None,
        action=action,
        seq=note.seq,
        round=note.round,
        speaker=note.speaker,
        kind=note.kind,
        visibility=note.visibility,
        old_content=note.content,
        new_content=new_content,
        user=user if getattr(user, "pk", None) else None,
    )


@transaction.atomic
def note_update(*, turn: Turn, user, content: str) -> Turn:
    """Correct a GM note's text; the old text becomes a revision. Same text: no change."""
    note = _locked_note(turn)
    experiment = Experiment.objects.get(pk=note.experiment_id)
    content = clean_content(content, limit=max_content_chars(experiment.config))
    if content == note.content:
        return note
    record_revision(note, user=user, action=TurnRevision.Action.EDIT, new_content=content)
    note.content = content
    note.tokens = tokens.count(content)
    note.save(update_fields=["content", "tokens"])
    _rederive(note, user=user)
    send_on_commit("hydrate_turn", note.pk)
    live_turns.announce(note)
    return note


@transaction.atomic
def note_delete(*, turn: Turn, user) -> TurnRevision:
    """Withdraw a GM note: its snapshot is kept as a revision, the turn leaves the log."""
    note = _locked_note(turn)
    revision = record_revision(note, user=user, action=TurnRevision.Action.DELETE)
    _rederive(note, user=user)
    live_turns.announce(note, before=live_turns.channels_now(note), gone=True)
    note.delete()
    return revision


def _rederive(note: Turn, *, user) -> None:
    rewind_digests(note)
    _release_lore(note, user=user)


def rewind_digests(note: Turn) -> None:
    """Every digest line that folded ``note`` goes back to the version before it."""
    rows = list(
        Summary.objects.filter(experiment_id=note.experiment_id, kind=Summary.Kind.DIGEST)
        .order_by("audience_key", "version")
        .only("id", "audience", "audience_key", "version", "source_turn_ids", "previous_id")
    )
    by_key: dict[str, list[Summary]] = {}
    for row in rows:
        by_key.setdefault(row.audience_key, []).append(row)
    round_now = Experiment.objects.values_list("current_round", flat=True).get(
        pk=note.experiment_id
    )
    for key, versions in by_key.items():
        affected = [v for v in versions if note.pk in (v.source_turn_ids or [])]
        if not affected:
            continue
        first = affected[0]
        base = Summary.objects.filter(pk=first.previous_id).first()
        latest = versions[-1]
        Summary.objects.create(
            experiment_id=note.experiment_id,
            kind=Summary.Kind.DIGEST,
            audience=latest.audience,
            audience_key=key,
            round_from=base.round_from if base else 0,
            round_to=base.round_to if base else 0,
            covered_seq=base.covered_seq if base else 0,
            text=base.text if base else "",
            sections=base.sections if base else [],
            source_turn_ids=base.source_turn_ids if base else [],
            previous_id=latest.pk,
            method=base.method if base else Summary.Method.FALLBACK,
            model=base.model if base else "",
            version=latest.version + 1,
        )
        audience = list(latest.audience) if latest.audience is not None else None
        send_on_commit(
            "summarize_audience", note.experiment_id, audience, max(round_now, note.round), True
        )


def _release_lore(note: Turn, *, user) -> None:
    """Unlink the note from lore; extracted, unlocked entries left with no source go."""
    entries = list(LoreEntry.objects.select_for_update().filter(source_turns=note).order_by("pk"))
    for entry in entries:
        entry.source_turns.remove(note)
        if (
            entry.locked
            or entry.origin != LoreEntry.Origin.EXTRACTED
            or entry.status == LoreEntry.Status.REJECTED
            or entry.source_turns.exists()
        ):
            continue
        old = entry.status
        entry.status = LoreEntry.Status.REJECTED
        entry.save(update_fields=["status", "updated_at"])
        LoreRevision.objects.create(
            entry=entry,
            actor=actor_for(user),
            user=user if getattr(user, "pk", None) else None,
            changes={"status": [old, entry.status], "source": [note.seq, None]},
        )
