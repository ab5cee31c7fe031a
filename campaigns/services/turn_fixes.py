"""Fix a turn (issue 24, ask 4): the DM side edits any turn, or has a model's step asked
again.

`turn_edit` corrects one turn's text. Nothing is lost: the earlier text becomes a
`TurnRevision` (read through `selectors.turn_revisions_visible_to`, so only by who read
that text), and what was derived from the old words follows the new ones:

- every digest line that folded the turn goes back to the version before it and is
  folded again in the worker (`notes.rewind_digests`, as for a GM note);
- World Bible entries sourced from the turn (extracted, unlocked, not taken over by a
  person) follow the text: a term the new text no longer uses loses the turn as a
  source (and the entry is rejected, with a revision, when no source is left); a
  first-use definition quoted from the old text is quoted again from the new text (or
  from the entry's next source);
- the vocabulary statistics that propose entries lose the old text's evidence and gain
  the new text's, in the worker (`memory.edits.edit_rehydrate`): a new name can become
  an entry like any other;
- packs need nothing: the pack cache is keyed by what a pack reads (`pack_cache`), so
  the new text is a new key.

`step_regenerate_start` / `step_regenerate_run` ask a model's relay step again: the same
participant, the same step, the pack it would get *now*, through the relay's own code
(`_Steps._ask`: fitting to the window, retries, the memory tool, weak-output repair,
usage recorded under the step's key plus ``:regen:<job>``), then the output leak guard
against each turn's audience. The new answer replaces the text of the turns the step
wrote, item for item of the same kind and audience (an audience never changes here); each
replaced text is kept as a revision and re-derived like an edit. A Celery task runs it
under a `Job` (kind ``regenerate``); the task claims its Job once, so a redelivered task
does nothing more. When the model fails (after retries), or nothing usable and unheld
comes back, the Job fails saying why and every old text stays.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from campaigns.models import (
    Experiment,
    Job,
    LoreEntry,
    LoreRevision,
    RoundStep,
    Turn,
    TurnRevision,
)
from campaigns.services import live_turns
from campaigns.services.dispatch import send_on_commit
from campaigns.services.lore import actor_for
from campaigns.services.notes import record_revision, rewind_digests
from campaigns.services.output_guard import OutputGuard, wider_than_speaker
from campaigns.services.relay.common import ACTIVE, HUMAN, _describe, _update_job, stale_after
from campaigns.validation import clean_content, max_content_chars
from context_engine import tokens
from context_engine.memory._text import clip_words, squash
from context_engine.memory.extraction import sentences_mentioning
from context_engine.visibility import parse_stored_visibility

# A first-use definition is the sentence, clipped like `define_term_with_method` does.
FIRST_USE_WORDS = 80
HELD_MESSAGE = "This turn is held for review: correct it on the Held page."
NOT_A_MODEL_STEP = (
    "Only a turn a model wrote in a round's step can be regenerated; "
    "this one was written by a person, by the relay itself, or outside a round."
)


# -- edit ----------------------------------------------------------------------------


@transaction.atomic
def turn_edit(*, turn: Turn, user, content: object) -> Turn:
    """Correct one turn's text (the DM side; the caller has checked who may). The old text
    becomes a revision and what was derived from it follows. Same text: no change. A held
    turn is corrected on the held page (`holds.held_turn_edit`): a 400 on ``turn``."""
    locked = Turn.objects.select_for_update().filter(pk=turn.pk).first()
    if locked is None:
        raise ValidationError({"turn": ["This turn no longer exists."]})
    if locked.held_at is not None:
        raise ValidationError({"turn": [HELD_MESSAGE]})
    experiment = Experiment.objects.get(pk=locked.experiment_id)
    content = clean_content(content, limit=max_content_chars(experiment.config))
    if content == locked.content:
        return locked
    return _replace_text(locked, user=user, content=content)


def _replace_text(turn: Turn, *, user, content: str) -> Turn:
    """Inside a transaction, ``turn`` locked: keep the old text, store the new, re-derive."""
    old = turn.content
    revision = record_revision(
        turn, user=user, action=TurnRevision.Action.EDIT, new_content=content
    )
    turn.content = content
    turn.tokens = tokens.count(content)
    turn.save(update_fields=["content", "tokens"])
    rewind_digests(turn)
    _lore_follows(turn, old=old, user=user)
    send_on_commit("rehydrate_edit", revision.pk)
    live_turns.announce(turn)
    return turn


def _quoted_from(definition: str, term: str, text: str) -> bool:
    """Is ``definition`` the first-use sentence the hydrator took from ``text``?"""
    wanted = squash(definition)
    return any(
        clip_words(squash(s), FIRST_USE_WORDS) == wanted for s in sentences_mentioning(term, text)
    )


def _first_use(term: str, turns) -> str:
    for source in turns:
        found = sentences_mentioning(term, source.content)
        if found:
            return clip_words(squash(found[0]), FIRST_USE_WORDS)
    return ""


def _lore_follows(turn: Turn, *, old: str, user) -> None:
    """World Bible entries sourced from ``turn`` follow its new text (see the module)."""
    entries = LoreEntry.objects.select_for_update().filter(source_turns=turn).order_by("pk")
    for entry in entries:
        if (
            entry.locked
            or entry.origin != LoreEntry.Origin.EXTRACTED
            or entry.status == LoreEntry.Status.REJECTED
            or entry.revisions.filter(actor__startswith="user:").exists()
        ):
            continue  # the DM's own, locked or rejected: a person decides, not an edit
        changes: dict[str, list] = {}
        from_old = _quoted_from(entry.definition, entry.term, old)
        if sentences_mentioning(entry.term, turn.content):
            if from_old:
                definition = _first_use(entry.term, [turn])
                if definition and definition != entry.definition:
                    changes["definition"] = [entry.definition, definition]
                    entry.definition = definition
        else:
            entry.source_turns.remove(turn)
            changes["source"] = [turn.seq, None]
            rest = list(entry.source_turns.order_by("seq"))
            if not rest:
                changes["status"] = [entry.status, LoreEntry.Status.REJECTED]
                entry.status = LoreEntry.Status.REJECTED
            elif from_old:
                definition = _first_use(entry.term, rest)
                if definition and definition != entry.definition:
                    changes["definition"] = [entry.definition, definition]
                    entry.definition = definition
        entry.save(update_fields=["definition", "status", "updated_at"])
        LoreRevision.objects.create(
            entry=entry,
            actor=actor_for(user),
            user=user if getattr(user, "pk", None) else None,
            changes=changes,
        )


# -- regenerate ----------------------------------------------------------------------


def step_of(turn: Turn) -> RoundStep:
    """The relay step a model wrote ``turn`` in, or a 400 on ``turn`` saying why not."""
    if turn.held_at is not None:
        raise ValidationError({"turn": [HELD_MESSAGE]})
    if turn.kind == Turn.Kind.SYSTEM:
        raise ValidationError({"turn": [NOT_A_MODEL_STEP]})
    rows = RoundStep.objects.filter(
        experiment_id=turn.experiment_id,
        round=turn.round,
        speaker=turn.speaker,
        status=RoundStep.Status.OK,
    ).exclude(model=HUMAN)
    row = next((r for r in rows if turn.pk in (r.turns or [])), None)
    participant = (
        Experiment.objects.get(pk=turn.experiment_id).participants.filter(role=turn.speaker).first()
    )
    if row is None or participant is None or participant.model == HUMAN:
        raise ValidationError({"turn": [NOT_A_MODEL_STEP]})
    return row


@transaction.atomic
def step_regenerate_start(*, turn: Turn, user) -> Job:
    """Queue the model's step that wrote ``turn`` to be asked again (a `Job`). A 400 on
    ``turn`` for a turn no model wrote in a step, or one whose step is being redone."""
    Experiment.objects.select_for_update().get(pk=turn.experiment_id)
    row = step_of(turn)
    if Job.objects.filter(
        experiment_id=turn.experiment_id,
        kind=Job.Kind.REGENERATE,
        status__in=ACTIVE,
        result__step_id=row.pk,
    ).exists():
        raise ValidationError({"turn": ["This step is already being regenerated."]})
    job = Job.objects.create(
        experiment_id=turn.experiment_id,
        kind=Job.Kind.REGENERATE,
        user=user if getattr(user, "pk", None) else None,
        message=f"Round {row.round}: {row.speaker}'s {row.step} step, queued to be asked again",
        result={
            "round": row.round,
            "step_id": row.pk,
            "step": row.step,
            "role": row.speaker,
            "turn": turn.pk,
        },
    )
    send_on_commit("run_regenerate", str(job.pk))
    return job


def step_regenerate_run(*, job_id) -> Job | None:
    """The task's body: claim the Job (pending, or running with no progress for the
    relay's stale time), ask the model again, replace the texts. None for no such Job."""
    from django.db.models import Q

    stale = timezone.now() - stale_after()
    claimed = (
        Job.objects.filter(pk=job_id, kind=Job.Kind.REGENERATE)
        .filter(Q(status=Job.Status.PENDING) | Q(status=Job.Status.RUNNING, updated_at__lt=stale))
        .update(status=Job.Status.RUNNING, progress=5, updated_at=timezone.now())
    )
    job = Job.objects.select_related("experiment", "user").filter(pk=job_id).first()
    if job is None or not claimed:
        return job
    from campaigns.services.relay.regenerate import Regeneration

    try:
        Regeneration(job, None).run()
    except Exception as exc:  # never leave the Job running: say what broke, then raise
        _update_job(
            job.pk,
            status=Job.Status.FAILED,
            progress=100,
            message=f"Regenerating failed ({_describe(exc)}); the old text stays.",
        )
        raise
    job.refresh_from_db()
    return job


def audience_of(turn: Turn, dm_roles: tuple[str, ...]) -> tuple[str, ...] | None:
    """A turn's audience as the parser writes one (None: everyone), for pairing."""
    parsed = parse_stored_visibility(turn.visibility, dm_roles)
    return None if parsed is None else tuple(sorted(set(parsed)))


def guard_verdict(*, experiment, speaker: str, visibility, content: str):
    """The output guard on a regenerated text meant for ``visibility``, or None when it
    reaches no one but its speaker (nothing to leak)."""
    if not wider_than_speaker(visibility, speaker):
        return None
    return OutputGuard(experiment=experiment, speaker=speaker, visibility=visibility).check(content)


def regenerable_ids(*, experiment: Experiment, turns) -> set[int]:
    """Which of ``turns`` a model wrote in a round's step (what `step_of` accepts), in one
    query over the steps of their rounds: the timeline's "Regenerate" buttons."""
    turns = [t for t in turns if t.held_at is None and t.kind != Turn.Kind.SYSTEM]
    if not turns:
        return set()
    humans = set(experiment.participants.filter(model=HUMAN).values_list("role", flat=True))
    wanted = {t.pk: t.speaker for t in turns}
    rows = RoundStep.objects.filter(
        experiment=experiment,
        round__in={t.round for t in turns},
        status=RoundStep.Status.OK,
    ).exclude(model=HUMAN)
    found = set()
    for row in rows.only("speaker", "turns"):
        if row.speaker in humans:
            continue
        found.update(pk for pk in row.turns or [] if wanted.get(pk) == row.speaker)
    return found
