"""Who may touch what (the API and, translated, the console): one access helper per resource.

Visibility (which rows a role reads) is decided in `campaigns.reads.selectors`; this module
only answers the API's authorisation questions on top of it:

- an experiment the user may not see at all is a 404 (its existence is not revealed);
- the experiment's owner and staff are *editors*: they read everything and may write;
- a user linked to a participant reads that role's view (``?as=`` cannot widen it) and
  may post turns only as that role, never something they could not read themselves.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from rest_framework.exceptions import NotFound, PermissionDenied

from campaigns.models import Experiment, Invitation, Job, LoreEntry, TranscriptUpload, Turn
from campaigns.reads import numbering, selectors
from campaigns.reads.selectors import UnknownRole, Viewer

# Largest id the databases store (signed 64-bit); anything bigger cannot exist.
MAX_ID = 2**63 - 1

# What a linked user may post, by the kind of their participant. Editors post anything.
PLAYER_TURN_KINDS = (Turn.Kind.ACTION, Turn.Kind.WHISPER, Turn.Kind.MONOLOGUE)
DM_TURN_KINDS = tuple(Turn.Kind.values)


@dataclass(frozen=True)
class Access:
    """An experiment as one user may use it."""

    experiment: Experiment
    viewer: Viewer
    can_edit: bool


def parse_id(raw: object, *, what: str = "Experiment") -> int:
    """A positive integer id from the URL, or 404 (never a 500 for junk or huge ids)."""
    text = str(raw)
    if not text.isascii() or not text.isdigit():
        raise NotFound(f"{what} not found.")
    value = int(text)
    if not 1 <= value <= MAX_ID:
        raise NotFound(f"{what} not found.")
    return value


def is_editor(*, user, experiment: Experiment) -> bool:
    """Owner and staff run the experiment; everyone else at most plays in it."""
    return selectors.is_editor(user=user, experiment=experiment)


def get_experiment_for(user, pk: object, *, write: bool = False) -> Access:
    """The experiment if ``user`` may see it, else 404; with ``write``, 403 for non-editors."""
    experiment = Experiment.objects.filter(pk=parse_id(pk)).first()
    if experiment is None:
        raise NotFound("Experiment not found.")
    viewer = selectors.viewer_for_user(experiment=experiment, user=user)
    if viewer is None:
        raise NotFound("Experiment not found.")
    can_edit = is_editor(user=user, experiment=experiment)
    if write and not can_edit:
        raise PermissionDenied("Only the experiment's owner (or staff) may do this.")
    return Access(experiment=experiment, viewer=viewer, can_edit=can_edit)


def reading_viewer(access: Access, as_role: str | None) -> Viewer:
    """The viewer a read runs as: ``?as=ROLE`` may narrow an omniscient reader, never widen.

    A linked player's ``as`` is ignored: they always read their own role's view.
    """
    if not as_role or not access.viewer.omniscient:
        return access.viewer
    try:
        return selectors.viewer_for_role(experiment=access.experiment, role=as_role)
    except UnknownRole as exc:
        raise ValidationError({"as": [str(exc)]}) from None


def get_lore_for(access: Access, viewer: Viewer, lid: object) -> LoreEntry:
    """A lore entry of the experiment that ``viewer`` may read, else 404."""
    # A reader who does not read everything knows entries by position (`shown_lore`).
    entry = numbering.lore_at(
        experiment=access.experiment, viewer=viewer, shown_id=parse_id(lid, what="Lore entry")
    )
    if entry is None:
        raise NotFound("Lore entry not found.")
    return entry


def get_invitation_for(user, iid: object) -> Invitation:
    """An invitation addressed to ``user`` and still open, else 404 — the same 404 for
    another user's invitation, an answered one and an id that does not exist."""
    invitation = (
        selectors.invitations_for_user(user).filter(pk=parse_id(iid, what="Invitation")).first()
    )
    if invitation is None:
        raise NotFound("Invitation not found.")
    return invitation


def get_campaign_invitation(access: Access, iid: object) -> Invitation:
    """One of the campaign's invitations, for its owner or staff (``access`` with write)."""
    invitation = (
        selectors.invitations_of(experiment=access.experiment)
        .filter(pk=parse_id(iid, what="Invitation"))
        .first()
    )
    if invitation is None:
        raise NotFound("Invitation not found.")
    return invitation


def get_job_for(user, task_id: object) -> tuple[Job, Access]:
    """A job, authorised through its experiment: outsiders get 404 like for the experiment."""
    try:
        job_id = uuid.UUID(str(task_id))
    except ValueError:
        raise NotFound("Task not found.") from None
    job = Job.objects.filter(pk=job_id).first()
    if job is None:
        raise NotFound("Task not found.")
    try:
        access = get_experiment_for(user, job.experiment_id)
    except NotFound:
        raise NotFound("Task not found.") from None
    return job, access


def get_upload_for(user, upload_id: object) -> TranscriptUpload:
    """A transcript upload, for the user who uploaded it alone: 404 for anyone else."""
    try:
        pk = uuid.UUID(str(upload_id))
    except ValueError:
        raise NotFound("Upload not found.") from None
    upload = TranscriptUpload.objects.filter(pk=pk, user_id=getattr(user, "pk", None)).first()
    if upload is None or not getattr(user, "pk", None):
        raise NotFound("Upload not found.")
    return upload


def job_as_read_by(job: Job, access: Access) -> Job:
    """The job as this reader may see it: its ``message`` and ``result`` may name or count
    what a player's role does not read ("4 digest(s) current"), so only editors get them;
    everyone else gets the status and progress (`Job.status_line`)."""
    job.shown_result = job.result if access.can_edit else None
    job.shown_message = job.message if access.can_edit else job.status_line
    return job


def check_context_role(access: Access, role: str) -> None:
    """May this user read ``role``'s prompt pack? Unknown roles are 404 naming the role.

    Editors and judges (who read the raw log) may read any pack; a player only their own.
    """
    if not access.experiment.participants.filter(role=role).exists():
        raise NotFound(f"No participant with role {role!r} in this experiment.")
    if access.can_edit or access.viewer.omniscient:
        return
    if access.viewer.role != role:
        raise PermissionDenied(f"You may read only your own role's context ({access.viewer.role}).")


def check_turn_post(access: Access, data: dict) -> None:
    """What a non-editor may post: as their own role, kinds of their participant's kind, and
    only turns they could read themselves (a player cannot write a GM note for others).

    Shapes are checked here only as far as authorisation needs; the turn service validates
    every field (roles exist, visibility is a non-empty list, content limit, …).
    """
    if access.can_edit:
        return
    viewer = access.viewer
    role = viewer.role
    if viewer.omniscient and not viewer.is_dm:
        raise PermissionDenied("Judges read the log; they do not post turns.")
    if data.get("speaker") != role:
        raise PermissionDenied({"speaker": [f"You may post only as {role!r}."]})
    kind = data.get("kind")
    allowed = DM_TURN_KINDS if viewer.is_dm else PLAYER_TURN_KINDS
    if kind not in allowed:
        raise PermissionDenied(
            {"kind": [f"As {role!r} you may post only: {', '.join(map(str, allowed))}."]}
        )
    if not viewer.is_dm:
        # Fields whose value changes what *other* roles read: a hinge is pinned into every
        # reader's pack, and tags open threads and invalidate lore (`dead:…`) for everyone.
        if data.get("hinge"):
            raise ValidationError({"hinge": ["Only the DM side marks hinges."]})
        if data.get("tags"):
            raise ValidationError({"tags": ["Only the DM side tags turns."]})
    visibility = data.get("visibility")
    if isinstance(visibility, list) and role not in visibility:
        raise ValidationError(
            {"visibility": [f"Visibility must include your own role {role!r} (or be null)."]}
        )
    if kind == Turn.Kind.WHISPER and (not isinstance(visibility, list) or len(set(visibility)) < 2):
        raise ValidationError(
            {"visibility": ["A whisper names its sender and at least one recipient."]}
        )
    if kind == Turn.Kind.MONOLOGUE and visibility != [role]:
        raise ValidationError({"visibility": [f"A monologue is private: use [{role!r}]."]})


def can_review_held(access: Access) -> bool:
    """The DM side reviews what the output guard held: the owner, staff, and a user seated
    at a DM participant (`Viewer.reviews_held`, set by the selector)."""
    return access.can_edit or access.viewer.reviews_held


def get_held_turn_for(access: Access, tid: object) -> Turn:
    """A held turn this user reviews: 403 for anyone who reviews none, 404 for an id that
    is not a held turn they review."""
    if not can_review_held(access):
        raise PermissionDenied("Only the DM side reviews held turns.")
    turn = (
        selectors.held_turns_visible_to(experiment=access.experiment, viewer=access.viewer)
        .filter(pk=parse_id(tid, what="Held turn"))
        .first()
    )
    if turn is None:
        raise NotFound("Held turn not found.")
    return turn


def can_fix_turns(access: Access) -> bool:
    """The DM side edits turns and has models' steps asked again: the owner, staff, and a
    user seated at a DM participant (as for GM notes)."""
    return access.can_edit or (access.viewer.is_dm and not access.viewer.omniscient)


def get_turn_for(access: Access, viewer: Viewer, tid: object) -> Turn:
    """A turn ``viewer`` reads, by the number they were shown (`numbering.shown_turns`:
    the id for an omniscient reader, else the position in their own stream), else 404 —
    the same 404 for a hidden turn as for none."""
    number = parse_id(tid, what="Turn")
    if numbering.numbers_are_positions(viewer):
        turn = numbering.turn_at_position(
            experiment=access.experiment, viewer=viewer, position=number
        )
    else:
        turn = (
            selectors.turns_visible_to(experiment=access.experiment, viewer=viewer)
            .filter(pk=number)
            .first()
        )
    if turn is None:
        raise NotFound("Turn not found.")
    return turn


def get_turn_to_fix(access: Access, tid: object) -> Turn:
    """A turn this user reads and may fix. A turn they do not read is a 404 for everyone,
    checked first: a player never learns whether a hidden turn exists; one they read but
    may not fix is a 403."""
    turn = get_turn_for(access, access.viewer, tid)
    if not can_fix_turns(access):
        raise PermissionDenied("Only the DM side edits turns.")
    return turn
