"""Reads that depend on who is looking. Visibility is decided here and nowhere else.

Every reader — HTMX views, DRF querysets, the admin's "view as", the engine adapter —
asks these selectors. A `Viewer` is either omniscient (the experiment's owner, staff,
judges: the raw log) or a role, filtered by `visibility__readable_by` in SQL.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Prefetch, Q, QuerySet

from campaigns.models import (
    Experiment,
    Fact,
    Invitation,
    LoreEntry,
    OutputHold,
    Participant,
    Question,
    Summary,
    Turn,
    TurnRevision,
)


@dataclass(frozen=True)
class Viewer:
    """Who is reading: a role (with whether it is DM-kind), or everything.

    ``reviews_held``: a person who reviews what the output guard held (the owner, staff,
    a user seated at a DM participant). Held turns reach no one else — no agent's pack,
    no judge, no memory worker — and a seated DM only those whose review audience
    (their stored visibility while held) names their role.
    """

    role: str | None
    omniscient: bool = False
    is_dm: bool = False
    reviews_held: bool = False

    @property
    def label(self) -> str:
        return "everything" if self.omniscient else f"as {self.role}"


# The raw log as the machinery reads it (memory workers, the Arena, exports): held turns
# are not in it until the DM publishes them.
OMNISCIENT = Viewer(role=None, omniscient=True)
# The owner or staff in the console and the API: everything, held turns too.
OWNER = Viewer(role=None, omniscient=True, reviews_held=True)


class UnknownRole(LookupError):
    """A role that is not a participant of the experiment."""

    def __init__(self, role: str):
        super().__init__(f"No participant with role {role!r} in this experiment.")
        self.role = role


def viewer_for_role(*, experiment: Experiment, role: str) -> Viewer:
    """The viewer for one of the experiment's roles. Judges read the raw log."""
    participant = experiment.participants.filter(role=role).only("role", "kind").first()
    if participant is None:
        raise UnknownRole(role)
    return viewer_for_participant(participant)


def viewer_for_participant(participant: Participant) -> Viewer:
    kind = participant.kind
    return Viewer(
        role=participant.role,
        omniscient=kind == Participant.Kind.JUDGE,
        is_dm=kind == Participant.Kind.DM,
    )


def dm_roles(*, experiment: Experiment) -> tuple[str, ...]:
    """Roles of DM-kind participants (what 'DM-only' means for corrupt visibility)."""
    roles = experiment.participants.filter(kind=Participant.Kind.DM).values_list("role", flat=True)
    return tuple(sorted(roles)) or ("DM",)


def _readable(field: str, viewer: Viewer) -> Q:
    if viewer.omniscient:
        return Q()
    return Q(**{f"{field}__readable_by": (viewer.role or "", viewer.is_dm)})


def turns_visible_to(*, experiment: Experiment | int, viewer: Viewer) -> QuerySet[Turn]:
    """The experiment's turns this viewer may read, in seq order."""
    experiment_id = experiment if isinstance(experiment, int) else experiment.pk
    return (
        Turn.objects.filter(experiment_id=experiment_id).filter(_turn_rule(viewer)).order_by("seq")
    )


def _turn_rule(viewer: Viewer) -> Q:
    """The turn-visibility condition for one viewer (the SQL half of the rules)."""
    published = Q() if viewer.reviews_held else Q(held_at__isnull=True)
    return published & _audience_rule(viewer)


def _audience_rule(viewer: Viewer) -> Q:
    """Who reads a text by its stored visibility and kind (turns, and revisions, which
    keep their turn's visibility and kind as they were)."""
    if viewer.omniscient:
        return Q()
    # A monologue is its speaker's alone, whatever its stored visibility says.
    return _readable("visibility", viewer) & (~Q(kind=Turn.Kind.MONOLOGUE) | Q(speaker=viewer.role))


def held_turns_visible_to(*, experiment: Experiment | int, viewer: Viewer) -> QuerySet[Turn]:
    """Turns the output guard holds that this viewer reviews (none for anyone else), with
    their open `OutputHold` rows as ``open_holds``, in seq order."""
    if not viewer.reviews_held:
        return Turn.objects.none()
    return (
        turns_visible_to(experiment=experiment, viewer=viewer)
        .filter(held_at__isnull=False)
        .prefetch_related(
            Prefetch(
                "holds",
                queryset=OutputHold.objects.filter(status=OutputHold.Status.HELD),
                to_attr="open_holds",
            )
        )
    )


def hold_quotes_shown_to(*, quotes: list[dict], viewer: Viewer) -> list[dict]:
    """A hold's recorded quotes as this reviewer may see them: a quoted source they cannot
    read (its recorded audience, fail closed) keeps its label and place in the held text
    but loses its excerpt."""
    shown = []
    for quote in quotes:
        audience = quote.get("audience")
        readable = viewer.omniscient or (
            isinstance(audience, list) and viewer.role is not None and viewer.role in audience
        )
        if readable:
            shown.append({**quote, "readable": True})
        else:
            kept = {k: quote.get(k) for k in ("key", "label", "words", "start", "end")}
            shown.append({**kept, "source": "", "readable": False})
    return shown


def turns_readable_by_all(*, experiment: Experiment, roles: Iterable[str]) -> QuerySet[Turn]:
    """Published turns every one of ``roles`` reads (what they already share)."""
    readable = Turn.objects.filter(experiment_id=experiment.pk)
    for role in sorted(set(roles)):
        viewer = viewer_for_role(experiment=experiment, role=role)
        readable = readable.filter(
            pk__in=turns_visible_to(experiment=experiment, viewer=viewer).values("pk")
        )
    return readable.filter(held_at__isnull=True).order_by("seq")


def turns_hidden_from(*, experiment: Experiment, roles: Iterable[str]) -> QuerySet[Turn]:
    """Published turns that at least one of ``roles`` cannot read: what an answer meant
    for those roles must not quote (the output guard's sources)."""
    shared = turns_readable_by_all(experiment=experiment, roles=roles)
    return turns_visible_to(experiment=experiment, viewer=OMNISCIENT).exclude(
        pk__in=shared.values("pk")
    )


def lore_readable_by_all(*, experiment: Experiment, roles: Iterable[str]) -> QuerySet[LoreEntry]:
    readable = LoreEntry.objects.filter(experiment_id=experiment.pk)
    for role in sorted(set(roles)):
        viewer = viewer_for_role(experiment=experiment, role=role)
        readable = readable.filter(
            pk__in=lore_visible_to(experiment=experiment, viewer=viewer).values("pk")
        )
    return readable


def lore_hidden_from(*, experiment: Experiment, roles: Iterable[str]) -> QuerySet[LoreEntry]:
    """Lore entries that at least one of ``roles`` cannot read (rejected ones included:
    their text is still the campaign's and no less hidden)."""
    shared = lore_readable_by_all(experiment=experiment, roles=roles)
    return LoreEntry.objects.filter(experiment_id=experiment.pk).exclude(pk__in=shared.values("pk"))


def turn_revisions_visible_to(
    *, experiment: Experiment | int, viewer: Viewer, turn_ids
) -> QuerySet[TurnRevision]:
    """The earlier texts of these turns that this viewer may read, oldest first.

    A revision is readable by exactly who could read its turn while that text was current.
    It stores the turn's visibility at the moment the text was replaced, and a reveal only
    ever widens an audience, so that stored visibility is everyone who ever read the old
    text: the same rule as for turns (`_turn_rule`) applies to it. A reveal after the edit
    widens the turn, never its older revisions (the new audience reads the current text
    only). Only revisions of turns the viewer reads now are considered (``turn_ids`` comes
    from `turns_visible_to`; the filter repeats it), and withdrawn notes' snapshots
    (``turn`` null) are the admin's alone.
    """
    experiment_id = experiment if isinstance(experiment, int) else experiment.pk
    readable_turns = turns_visible_to(experiment=experiment_id, viewer=viewer).filter(
        pk__in=list(turn_ids)
    )
    return (
        TurnRevision.objects.filter(
            experiment_id=experiment_id,
            action=TurnRevision.Action.EDIT,
            turn__in=readable_turns.values("pk"),
        )
        .filter(_audience_rule(viewer))
        .select_related("user")
        .order_by("id")
    )


def whisper_existence_for(*, experiment: Experiment | int, viewer: Viewer) -> QuerySet[Turn]:
    """Whispers this viewer may NOT read, with only the columns that show they happened.

    For `show_whisper_existence` ("Cassia whispered to DM"): content and tags are never
    fetched, so nothing of what was said can reach the caller.
    """
    experiment_id = experiment if isinstance(experiment, int) else experiment.pk
    readable = turns_visible_to(experiment=experiment_id, viewer=viewer)
    return (
        Turn.objects.filter(experiment_id=experiment_id, kind=Turn.Kind.WHISPER)
        .filter(held_at__isnull=True)
        .exclude(pk__in=readable.values("pk"))
        .only("id", "seq", "round", "speaker", "kind", "visibility", "hinge")
    )


def whisper_stubs_shown_to(*, experiment: Experiment, viewer: Viewer) -> QuerySet[Turn]:
    """`whisper_existence_for`, but only where the experiment shows that whispers happened
    (``show_whisper_existence``) and for a viewer who does not already read them all."""
    if viewer.omniscient or not (experiment.config or {}).get("show_whisper_existence"):
        return Turn.objects.none()
    return whisper_existence_for(experiment=experiment, viewer=viewer)


def lore_visible_to(*, experiment: Experiment | int, viewer: Viewer) -> QuerySet[LoreEntry]:
    experiment_id = experiment if isinstance(experiment, int) else experiment.pk
    return LoreEntry.objects.filter(experiment_id=experiment_id).filter(
        _readable("audience", viewer)
    )


def summaries_visible_to(*, experiment: Experiment | int, viewer: Viewer) -> QuerySet[Summary]:
    experiment_id = experiment if isinstance(experiment, int) else experiment.pk
    return Summary.objects.filter(experiment_id=experiment_id).filter(_readable("audience", viewer))


def facts_visible_to(*, experiment: Experiment | int, viewer: Viewer) -> QuerySet[Fact]:
    """Planted facts whose audience includes the viewer (omniscient readers: all)."""
    experiment_id = experiment if isinstance(experiment, int) else experiment.pk
    return Fact.objects.filter(experiment_id=experiment_id).filter(_readable("audience", viewer))


def question_list(*, experiment: Experiment | int) -> QuerySet[Question]:
    """Evidence-recall questions in file order. The Arena's own data, read only for the
    experiment's owner (the Arena replays as the omniscient reader and filters each
    role's evidence with the engine's predicate); no player-facing read uses it."""
    experiment_id = experiment if isinstance(experiment, int) else experiment.pk
    return Question.objects.filter(experiment_id=experiment_id).order_by("position", "id")


def current_round(*, experiment: Experiment | int) -> int:
    """The campaign clock (the open round), never the highest round stored: a turn's round
    is input, and the clock decides reveals, strain and retrieval for every role."""
    experiment_id = experiment if isinstance(experiment, int) else experiment.pk
    # Read from the row, not the instance: a round start elsewhere may have moved it.
    return Experiment.objects.values_list("current_round", flat=True).get(pk=experiment_id)


def secret_readable(*, participant: Participant, viewer: Viewer, round_now: int) -> bool:
    """A secret goal: its owner, judges/owner, and everyone once its reveal round passed."""
    if viewer.omniscient or viewer.role == participant.role:
        return True
    return participant.reveal_round is not None and round_now > participant.reveal_round


def identity_readable(*, participant: Participant, viewer: Viewer) -> bool:
    """A participant's identity (system prompt): its owner and omniscient readers only.

    Unlike a secret goal it is never revealed: it is how the agent is instructed.
    """
    return viewer.omniscient or viewer.role == participant.role


def experiments_for_user(user) -> QuerySet[Experiment]:
    """Experiments a user may see: staff all; others those they own or play in."""
    if user.is_staff:
        return Experiment.objects.all()
    return Experiment.objects.filter(Q(owner=user) | Q(participants__user=user)).distinct()


def is_editor(*, user, experiment: Experiment) -> bool:
    """Owner and staff run the campaign: they read everything, write anything, and they
    alone move its clock (`campaigns.services.turns.may_move_clock`). Everyone else —
    a player, a judge, a user seated as the DM — at most plays in it."""
    if user is None or not getattr(user, "pk", None):
        return False
    return bool(user.is_staff) or (
        experiment.owner_id is not None and experiment.owner_id == user.pk
    )


def invitations_for_user(user) -> QuerySet[Invitation]:
    """The seats offered to ``user`` and not yet answered, newest first. All an invitee
    reads of a campaign before accepting: its name, the seat's role, who invited them."""
    if user is None or not getattr(user, "pk", None):
        return Invitation.objects.none()
    return (
        Invitation.objects.filter(user_id=user.pk, status=Invitation.Status.PENDING)
        .select_related("experiment", "participant", "invited_by")
        .order_by("-id")
    )


def invitations_of(*, experiment: Experiment | int) -> QuerySet[Invitation]:
    """Every invitation of a campaign, newest first: its owner's and staff's to read. The
    invitee is shown as the inviter named them, never as the user it resolved to."""
    experiment_id = experiment if isinstance(experiment, int) else experiment.pk
    return (
        Invitation.objects.filter(experiment_id=experiment_id)
        .select_related("participant")
        .order_by("-id")
    )


def viewer_for_user(*, experiment: Experiment, user) -> Viewer | None:
    """What a signed-in user may read of an experiment, or None if nothing at all.

    Owner and staff read everything; a user linked to a participant reads that role's view.
    """
    if is_editor(user=user, experiment=experiment):
        return OWNER
    participant = experiment.participants.filter(user=user).order_by("order", "id").first()
    if participant is None:
        return None
    viewer = viewer_for_participant(participant)
    if viewer.is_dm:  # the person at the DM's seat reviews what the guard held
        return Viewer(role=viewer.role, omniscient=viewer.omniscient, is_dm=True, reviews_held=True)
    return viewer


def turns_as_role(*, queryset: QuerySet[Turn], role: str) -> QuerySet[Turn]:
    """Narrow turns (possibly of many experiments) to what ``role`` reads in each.

    Used by the admin's "view as" filter. Experiments without that role show nothing.
    """
    participants = Participant.objects.filter(role=role).values_list("experiment_id", "kind")
    condition = Q(pk__in=[])
    for experiment_id, kind in participants:
        viewer = Viewer(role=role, omniscient=kind == "judge", is_dm=kind == "dm")
        condition |= Q(experiment_id=experiment_id) & _turn_rule(viewer)
    return queryset.filter(condition)


# --- live channels (issue 25) -------------------------------------------------------------
#
# A model's answer streams to the pages entitled to it over one channel per audience. Who
# reads a channel follows the rules above: a text of visibility V reaches the roles in V
# (a monologue's V is its speaker alone), a public one everyone; omniscient readers (owner,
# staff, judges) read everything; the guard's held drafts only their reviewers. Each viewer
# subscribes to channels that never overlap, so no event reaches a page twice.

LIVE_PUBLIC = "public"
LIVE_ALL = "all"  # everything published, for omniscient readers
LIVE_OWNER = "owner"  # held drafts and job messages: the owner and staff (editors)


def live_role_channel(role: str) -> str:
    return f"role:{role}"


def live_held_channel(role: str) -> str:
    return f"held:{role}"


def audiences_for_viewer(viewer: Viewer) -> list[str]:
    """Exactly the live channels ``viewer`` may subscribe to, in a fixed order."""
    if viewer.omniscient:
        channels = [LIVE_ALL]
        if viewer.reviews_held:
            channels.append(LIVE_OWNER)
        return channels
    if viewer.role is None:
        return [LIVE_PUBLIC]
    channels = [LIVE_PUBLIC, live_role_channel(viewer.role)]
    if viewer.reviews_held:
        channels.append(live_held_channel(viewer.role))
    return channels


def live_channels_for_audience(visibility) -> list[str]:
    """The channels a published text of ``visibility`` (None: public; else the sorted
    roles that read it — a monologue's is its speaker alone) goes to."""
    if visibility is None:
        return [LIVE_ALL, LIVE_PUBLIC]
    return [LIVE_ALL, *(live_role_channel(role) for role in sorted(set(visibility)))]


def live_channels_for_held(review: Iterable[str]) -> list[str]:
    """The channels of a draft the output guard held: the owner's and its reviewers'."""
    return [LIVE_OWNER, *(live_held_channel(role) for role in sorted(set(review)))]


def live_channels_for_turn(turn: Turn) -> list[str]:
    """The channels of the readers of a stored ``turn`` (the ``turn`` event), by the
    same rules as `turns_visible_to`: held, its reviewers (the owner's channel and those
    of the roles its stored review audience names); a monologue, its speaker; else its
    stored visibility (null: everyone). A corrupt visibility fails closed: the
    omniscient readers only."""
    value = turn.visibility
    roles = (
        list(value)
        if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value)
        else None
    )
    if turn.held_at is not None:
        return live_channels_for_held(roles or ())
    if turn.kind == Turn.Kind.MONOLOGUE:
        return live_channels_for_audience([turn.speaker])
    if value is None:
        return live_channels_for_audience(None)
    if roles is None:
        return [LIVE_ALL]
    return live_channels_for_audience(roles)
