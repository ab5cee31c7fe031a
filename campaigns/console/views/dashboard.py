"""`/` — every campaign the user may see, with each agent's context meter."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.decorators import login_required
from django.db.models import Count, Max

from campaigns import selectors
from campaigns.api.access import is_editor
from campaigns.console.views.base import page
from campaigns.models import Experiment, Job, LoreEntry, Participant
from campaigns.services.context import pack_for_role

STRAIN_LABELS = {
    "normal": "normal",
    "strain_1": "strain I",
    "strain_2": "strain II",
    "strain_3": "strain III",
}
ACTIVE = (Job.Status.PENDING, Job.Status.RUNNING)


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


def _meters(experiment: Experiment, participants: list[Participant]) -> list[Meter]:
    meters = []
    for participant in participants:
        if participant.kind == Participant.Kind.JUDGE:
            continue
        pack = pack_for_role(experiment=experiment, role=participant.role)
        meters.append(
            Meter(
                role=participant.role,
                kind=participant.kind,
                tokens=pack.total_tokens,
                budget=pack.budget,
                strain=pack.strain,
            )
        )
    return meters


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
        last = selectors.turns_visible_to(experiment=experiment, viewer=viewer).aggregate(
            last=Max("created_at")
        )["last"]
        rows.append(
            Row(
                experiment=experiment,
                can_edit=editor,
                viewer_label="owner" if editor else f"playing {viewer.role}",
                last_activity=last,
                job=jobs.get(experiment.pk),
                proposed=proposed.get(experiment.pk, 0) if editor else None,
                meters=_meters(experiment, shown),
            )
        )
    return rows


@login_required
def dashboard(request):
    return page(
        request,
        "campaigns/console/dashboard.html",
        {"rows": dashboard_rows(request.user)},
        partial="campaigns",
    )
