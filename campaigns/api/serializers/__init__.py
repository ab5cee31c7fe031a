"""API serializers, by resource. They shape data; services and selectors hold the logic."""

from campaigns.api.serializers.base import StrictSerializer
from campaigns.api.serializers.experiments import (
    ConnectionSerializer,
    ConnectionTestSerializer,
    ExperimentCreateSerializer,
    ExperimentSerializer,
    ExperimentUpdateSerializer,
    ParticipantCreatedSerializer,
    ParticipantCreateSerializer,
    ParticipantSerializer,
    ParticipantUpdateSerializer,
)
from campaigns.api.serializers.lore import (
    LoreCreateSerializer,
    LoreSerializer,
    LoreUpdateSerializer,
)
from campaigns.api.serializers.memory import (
    CommandSerializer,
    ContextSerializer,
    EmptySerializer,
    JobSerializer,
    RetrievalResultSerializer,
    SummarySerializer,
)
from campaigns.api.serializers.seats import (
    InvitationAnswerSerializer,
    InvitationCreateSerializer,
    InvitationSerializer,
    ReceivedInvitationSerializer,
)
from campaigns.api.serializers.transcripts import TRANSCRIPT_IMPORT_SCHEMA, TranscriptSerializer
from campaigns.api.serializers.turns import (
    RevealSerializer,
    TurnCreateSerializer,
    TurnDetailSerializer,
    TurnEditSerializer,
    TurnFilterSerializer,
    TurnSerializer,
    VisibilityChangeSerializer,
)

__all__ = [
    "TRANSCRIPT_IMPORT_SCHEMA",
    "CommandSerializer",
    "ConnectionSerializer",
    "ConnectionTestSerializer",
    "ContextSerializer",
    "EmptySerializer",
    "ExperimentCreateSerializer",
    "ExperimentSerializer",
    "ExperimentUpdateSerializer",
    "InvitationAnswerSerializer",
    "InvitationCreateSerializer",
    "InvitationSerializer",
    "JobSerializer",
    "LoreCreateSerializer",
    "LoreSerializer",
    "LoreUpdateSerializer",
    "ParticipantCreateSerializer",
    "ParticipantCreatedSerializer",
    "ParticipantSerializer",
    "ParticipantUpdateSerializer",
    "ReceivedInvitationSerializer",
    "RetrievalResultSerializer",
    "RevealSerializer",
    "StrictSerializer",
    "SummarySerializer",
    "TranscriptSerializer",
    "TurnCreateSerializer",
    "TurnDetailSerializer",
    "TurnEditSerializer",
    "TurnFilterSerializer",
    "TurnSerializer",
    "VisibilityChangeSerializer",
]
