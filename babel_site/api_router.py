"""The REST API's URL table (SPEC §8). Views live in `campaigns.api.views`.

Ids are matched loosely (``[^/]+``) and parsed by the access helpers, so a junk or
out-of-range id is the API's JSON 404, never Django's HTML page or a database error.
"""

from django.urls import path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from campaigns.api import views

ID = r"(?P<id>[^/]+)"
EXPERIMENT = rf"^experiments/{ID}"

urlpatterns = [
    path("auth/token/", views.ObtainTokenView.as_view(), name="api-token"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves Swagger UI's start-up script as a file: no inline script (CSP).
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("experiments/", views.ExperimentListView.as_view(), name="api-experiments"),
    re_path(rf"{EXPERIMENT}/$", views.ExperimentDetailView.as_view(), name="api-experiment"),
    re_path(
        rf"{EXPERIMENT}/participants/$",
        views.ParticipantListView.as_view(),
        name="api-participants",
    ),
    re_path(
        rf"{EXPERIMENT}/participants/(?P<pid>[^/]+)/$",
        views.ParticipantDetailView.as_view(),
        name="api-participant",
    ),
    re_path(
        rf"{EXPERIMENT}/invitations/$",
        views.CampaignInvitationListView.as_view(),
        name="api-campaign-invitations",
    ),
    re_path(
        rf"{EXPERIMENT}/invitations/(?P<iid>[^/]+)/$",
        views.CampaignInvitationDetailView.as_view(),
        name="api-campaign-invitation",
    ),
    re_path(
        rf"{EXPERIMENT}/participants/(?P<pid>[^/]+)/test-connection/$",
        views.ParticipantConnectionView.as_view(),
        name="api-participant-connection",
    ),
    re_path(rf"{EXPERIMENT}/turns/$", views.TurnListView.as_view(), name="api-turns"),
    re_path(
        rf"{EXPERIMENT}/turns/(?P<tid>[^/]+)/$",
        views.TurnDetailView.as_view(),
        name="api-turn",
    ),
    re_path(
        rf"{EXPERIMENT}/turns/(?P<tid>[^/]+)/regenerate/$",
        views.TurnRegenerateView.as_view(),
        name="api-turn-regenerate",
    ),
    re_path(
        rf"{EXPERIMENT}/turns/(?P<tid>[^/]+)/reveal/$",
        views.TurnRevealView.as_view(),
        name="api-turn-reveal",
    ),
    re_path(rf"{EXPERIMENT}/held/$", views.HeldListView.as_view(), name="api-held"),
    re_path(
        rf"{EXPERIMENT}/held/(?P<tid>[^/]+)/publish/$",
        views.HeldPublishView.as_view(),
        name="api-held-publish",
    ),
    re_path(
        rf"{EXPERIMENT}/held/(?P<tid>[^/]+)/edit/$",
        views.HeldEditView.as_view(),
        name="api-held-edit",
    ),
    re_path(
        rf"{EXPERIMENT}/held/(?P<tid>[^/]+)/discard/$",
        views.HeldDiscardView.as_view(),
        name="api-held-discard",
    ),
    re_path(rf"{EXPERIMENT}/lore/$", views.LoreListView.as_view(), name="api-lore"),
    re_path(
        rf"{EXPERIMENT}/lore/(?P<lid>[^/]+)/$",
        views.LoreDetailView.as_view(),
        name="api-lore-entry",
    ),
    re_path(rf"{EXPERIMENT}/summaries/$", views.SummaryListView.as_view(), name="api-summaries"),
    re_path(
        rf"{EXPERIMENT}/context/(?P<role>[^/]+)/$",
        views.ContextView.as_view(),
        name="api-context",
    ),
    re_path(rf"{EXPERIMENT}/commands/$", views.CommandView.as_view(), name="api-commands"),
    re_path(rf"{EXPERIMENT}/rounds/$", views.RoundView.as_view(), name="api-rounds"),
    re_path(rf"{EXPERIMENT}/facts/$", views.FactListView.as_view(), name="api-facts"),
    re_path(rf"{EXPERIMENT}/arena/$", views.ArenaView.as_view(), name="api-arena"),
    re_path(rf"{EXPERIMENT}/export/$", views.ExportView.as_view(), name="api-export"),
    re_path(rf"{EXPERIMENT}/log/$", views.SessionLogView.as_view(), name="api-log"),
    re_path(rf"{EXPERIMENT}/usage/$", views.UsageView.as_view(), name="api-usage"),
    path("import/", views.ImportView.as_view(), name="api-import"),
    path("invitations/", views.InvitationListView.as_view(), name="api-invitations"),
    re_path(
        r"^invitations/(?P<iid>[^/]+)/accept/$",
        views.InvitationAcceptView.as_view(),
        name="api-invitation-accept",
    ),
    re_path(
        r"^invitations/(?P<iid>[^/]+)/decline/$",
        views.InvitationDeclineView.as_view(),
        name="api-invitation-decline",
    ),
    re_path(r"^tasks/(?P<task_id>[^/]+)/$", views.TaskView.as_view(), name="api-task"),
    re_path(
        r"^tasks/(?P<task_id>[^/]+)/skip/$", views.TaskSkipView.as_view(), name="api-task-skip"
    ),
]
