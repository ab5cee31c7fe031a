"""DRF views. Thin: parse, authorize (`campaigns.access`), call one service or
selector, render. Split by resource."""

from campaigns.api.views.arena import ArenaView, FactListView
from campaigns.api.views.auth import ObtainTokenView
from campaigns.api.views.experiments import (
    ExperimentDetailView,
    ExperimentListView,
    ParticipantConnectionView,
    ParticipantDetailView,
    ParticipantListView,
)
from campaigns.api.views.holds import (
    HeldDiscardView,
    HeldEditView,
    HeldListView,
    HeldPublishView,
)
from campaigns.api.views.jobs import RoundView, TaskSkipView, TaskView
from campaigns.api.views.lore import LoreDetailView, LoreListView
from campaigns.api.views.memory import CommandView, ContextView, SummaryListView
from campaigns.api.views.seats import (
    CampaignInvitationDetailView,
    CampaignInvitationListView,
    InvitationAcceptView,
    InvitationDeclineView,
    InvitationListView,
)
from campaigns.api.views.transcripts import ExportView, ImportView, SessionLogView
from campaigns.api.views.turns import (
    TurnDetailView,
    TurnListView,
    TurnRegenerateView,
    TurnRevealView,
)
from campaigns.api.views.usage import UsageView

__all__ = [
    "ArenaView",
    "CampaignInvitationDetailView",
    "CampaignInvitationListView",
    "CommandView",
    "ContextView",
    "ExperimentDetailView",
    "ExperimentListView",
    "ExportView",
    "FactListView",
    "HeldDiscardView",
    "HeldEditView",
    "HeldListView",
    "HeldPublishView",
    "ImportView",
    "InvitationAcceptView",
    "InvitationDeclineView",
    "InvitationListView",
    "LoreDetailView",
    "LoreListView",
    "ObtainTokenView",
    "ParticipantConnectionView",
    "ParticipantDetailView",
    "ParticipantListView",
    "RoundView",
    "SessionLogView",
    "SummaryListView",
    "TaskSkipView",
    "TaskView",
    "TurnDetailView",
    "TurnListView",
    "TurnRegenerateView",
    "TurnRevealView",
    "UsageView",
]
