"""`/` — every campaign the user may see, with each agent's context meter."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from django.core.cache import cache
from django.db.models import Count, OuterRef, Subquery

from campaigns.access import is_editor
from campaigns.console.views.base import login_required, page
from campaigns.models import (
    ContextEvent,
    Experiment,
    Job,
    LoreEntry,
    Participant,
    Summary,
    Turn,
    TurnRevision,
    VisibilityChange,
)
from campaigns.reads import selectors
from campaigns.services.context import pack_for_role
from campaigns.services.relay import ACTIVE

STRAIN_LABELS = {
    "normal": "normal",
    "strain_1": "strain I",
    "strain_2": "strain II",
    "strain_3": "strain III",
}
METER_TTL = 300


@dataclass(frozen=True)
class Meter:
    role: str
    kind: str
    tokens: int
    budget: int
    strain: str

    @property
    def strain_label(self) -> str:
        return STRAIN_LABELS.get(self.strain, self.strain)

    @property
    def percent(self) -> int:
        return min(100, round(100 * self.tokens / self.budget)) if self.budget else 0


@dataclass(frozen=True)
class Row:
    experiment: Experiment
    can_edit: bool
    viewer_label: str
    last_activity: object
    job: Job | None
    proposed: int | None
    meters: list[Meter]
    whispers_waiting: int | None = None  # the DM side's: player whispers not yet answered


def _fingerprints(ids: list[int]) -> dict[int, str]:
    """Everything a pack is built from, as one string per experiment (one query).

    A new turn, a note edit or delete, a lore change, a new digest, a command, a reveal,
    a cast or config change all move one of these; the meter cache keys on it.
    """

    def newest(model, field, **where):
        return Subquery(
            model.objects.filter(experiment_id=OuterRef("pk"), **where)
            .order_by(f"-{field}")
            .values(field)[:1]
        )

    rows = (
        Experiment.objects.filter(pk__in=ids)
        .annotate(
            fp_turn=newest(Turn, "seq"),
            fp_rev=newest(TurnRevision, "id"),
            fp_lore=newest(LoreEntry, "updated_at"),
            fp_summary=newest(Summary, "id"),
            fp_event=newest(ContextEvent, "id"),
            fp_reveal=newest(VisibilityChange, "id"),
            fp_cast=newest(Participant, "id"),
        )
        .values_list(
            "pk",
            "updated_at",
            "current_round",
            "fp_turn",
            "fp_rev",
            "fp_lore",
            "fp_summary",
            "fp_event",
            "fp_reveal",
            "fp_cast",
        )
    )
    return {row[0]: "|".join(map(str, row[1:])) for row in rows}


def _meters(experiment: Experiment, participants: list[Participant], fingerprint: str):
    """Each agent's context meter. Building a pack costs tens of milliseconds at 10,000
    turns, so meters are cached per role under the experiment's fingerprint (and expire
    after METER_TTL seconds whatever happens)."""
    meters = []
    for participant in participants:
        if participant.kind == Participant.Kind.JUDGE:
            continue
        key = (
            "console:meter:"
            + hashlib.sha256(
                f"{experiment.pk}|{participant.role}|{fingerprint}".encode()
            ).hexdigest()
        )
        cached = cache.get(key)
        if cached is None:
            pack = pack_for_role(experiment=experiment, role=participant.role)
            cached = (pack.total_tokens, pack.budget, pack.strain)
            cache.set(key, cached, METER_TTL)
        tokens, budget, strain = cached
        meters.append(
            Meter(
                role=participant.role,
                kind=participant.kind,
                tokens=tokens,
                budget=budget,
                strain=strain,
            )
        )
    return meters


def whispers_waiting(experiment: Experiment, dm_roles: set[str]) -> int:
    """Player whispers to a DM role since the DM side last whispered (its answers): what
    waits for the DM. Two indexed reads of the experiment's whispers."""
    whispers = Turn.objects.filter(experiment=experiment, kind=Turn.Kind.WHISPER)
    last_answer = (
        whispers.filter(speaker__in=dm_roles).order_by("-seq").values_list("seq", flat=True)
    ).first() or 0
    pending = (
        whispers.filter(seq__gt=last_answer)
        .exclude(speaker__in=dm_roles)
        .values_list("visibility", flat=True)
    )
    return sum(1 for audience in pending if isinstance(audience, list) and set(audience) & dm_roles)


def dashboard_rows(user) -> list[Row]:
    """One row per campaign the user may see. Counts and meters come from the same
    selectors as everything else: a player gets their own role's meter and no one
    else's numbers (counts are derived data too)."""
    experiments = list(
        selectors.experiments_for_user(user).order_by("-updated_at", "-id").select_related()
    )
    ids = [e.pk for e in experiments]
    jobs = {}
    for job in Job.objects.filter(experiment_id__in=ids, status__in=ACTIVE).order_by("created_at"):
        jobs[job.experiment_id] = job
    proposed = dict(
        LoreEntry.objects.filter(experiment_id__in=ids, status=LoreEntry.Status.PROPOSED)
        .values_list("experiment_id")
        .annotate(n=Count("id"))
        .values_list("experiment_id", "n")
    )
    fingerprints = _fingerprints(ids)
    participants: dict[int, list[Participant]] = {}
    for participant in Participant.objects.filter(experiment_id__in=ids).order_by("order", "id"):
        participants.setdefault(participant.experiment_id, []).append(participant)
    rows = []
    for experiment in experiments:
        editor = is_editor(user=user, experiment=experiment)
        cast = participants.get(experiment.pk, [])
        if editor:
            viewer = selectors.OMNISCIENT
            shown = cast
        else:
            mine = next((p for p in cast if p.user_id == user.pk), None)
            if mine is None:  # pragma: no cover - experiments_for_user listed it
                continue
            viewer = selectors.viewer_for_participant(mine)
            shown = [mine]
        # The newest turn this viewer reads, found backwards along (experiment, seq).
        last = (
            selectors.turns_visible_to(experiment=experiment, viewer=viewer)
            .order_by("-seq")
            .values_list("created_at", flat=True)
            .first()
        )
        dm_roles = {p.role for p in cast if p.kind == Participant.Kind.DM}
        rows.append(
            Row(
                whispers_waiting=(
                    whispers_waiting(experiment, dm_roles)
                    if dm_roles and (editor or viewer.is_dm)
                    else None
                ),
                experiment=experiment,
                can_edit=editor,
                viewer_label="owner" if editor else f"playing {viewer.role}",
                last_activity=last,
                job=jobs.get(experiment.pk),
                proposed=proposed.get(experiment.pk, 0) if editor else None,
                meters=_meters(experiment, shown, fingerprints.get(experiment.pk, "")),
            )
        )
    return rows


@login_required
def dashboard(request):
    rows = dashboard_rows(request.user)
    archived = Experiment.Status.ARCHIVED
    return page(
        request,
        "campaigns/console/dashboard.html",
        {
            "rows": [row for row in rows if row.experiment.status != archived],
            "archived": [row for row in rows if row.experiment.status == archived],
            # Seats offered to this user: the campaign's name, the seat and who offered
            # it, and nothing else of the campaign until they accept.
            "invitations": list(selectors.invitations_for_user(request.user)),
        },
        partial="campaigns",
    )
