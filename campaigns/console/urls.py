"""The console's URLs (SPEC §7, issue 8): `/` and `/campaigns/<id>/…`."""

from django.urls import path

from campaigns.console import arena
from campaigns.console.views import (
    campaign,
    cast,
    context,
    dashboard,
    held,
    lore,
    memory,
    notes,
    run,
    seats,
    setup,
    takehome,
    turn_fixes,
    usage,
    whispers,
)

app_name = "console"

urlpatterns = [
    path("", dashboard.dashboard, name="dashboard"),
    path("campaigns/new/", setup.campaign_new, name="campaign_new"),
    path("campaigns/import/", takehome.import_page, name="import"),
    path("imports/<str:uid>/", takehome.import_status, name="import_status"),
    path("campaigns/<str:pk>/", campaign.campaign, name="campaign"),
    path("campaigns/<str:pk>/settings/", setup.campaign_settings, name="settings"),
    path("campaigns/<str:pk>/archive/", setup.campaign_archive, name="archive"),
    path("campaigns/<str:pk>/delete/", setup.campaign_delete, name="delete"),
    path("campaigns/<str:pk>/duplicate/", setup.campaign_duplicate, name="duplicate"),
    path("campaigns/<str:pk>/cast/", cast.cast, name="cast"),
    path("campaigns/<str:pk>/log/", takehome.session_log, name="log"),
    path("campaigns/<str:pk>/export/", takehome.export, name="export"),
    path("campaigns/<str:pk>/cast/<str:pid>/", cast.participant_edit, name="participant"),
    path(
        "campaigns/<str:pk>/cast/<str:pid>/test/",
        cast.participant_test,
        name="participant_test",
    ),
    path(
        "campaigns/<str:pk>/cast/<str:pid>/remove/",
        cast.participant_remove,
        name="participant_remove",
    ),
    path("campaigns/<str:pk>/play/", run.play_post, name="play"),
    path("campaigns/<str:pk>/turns/", campaign.turn_post, name="turn_post"),
    path("campaigns/<str:pk>/commands/", run.command_post, name="command_post"),
    path("campaigns/<str:pk>/turns/<str:tid>/", turn_fixes.turn_fix, name="turn_fix"),
    path(
        "campaigns/<str:pk>/turns/<str:tid>/edit/", turn_fixes.turn_fix_edit, name="turn_fix_edit"
    ),
    path(
        "campaigns/<str:pk>/turns/<str:tid>/regenerate/",
        turn_fixes.turn_regenerate,
        name="turn_regenerate",
    ),
    path(
        "campaigns/<str:pk>/turns/<str:tid>/reveal/",
        campaign.turn_reveal_post,
        name="turn_reveal",
    ),
    path("campaigns/<str:pk>/jobs/<str:job_id>/", run.job_progress, name="job"),
    path("campaigns/<str:pk>/jobs/<str:job_id>/skip/", run.human_skip_post, name="human_skip"),
    path("campaigns/<str:pk>/jobs/<str:job_id>/stop/", run.play_stop_post, name="play_stop"),
    path("campaigns/<str:pk>/held/", held.held, name="held"),
    path("campaigns/<str:pk>/held/<str:tid>/publish/", held.held_publish, name="held_publish"),
    path("campaigns/<str:pk>/held/<str:tid>/edit/", held.held_edit, name="held_edit"),
    path("campaigns/<str:pk>/held/<str:tid>/discard/", held.held_discard, name="held_discard"),
    path(
        "invitations/<str:iid>/accept/",
        seats.invitation_answer,
        {"answer": "accept"},
        name="invitation_accept",
    ),
    path(
        "invitations/<str:iid>/decline/",
        seats.invitation_answer,
        {"answer": "decline"},
        name="invitation_decline",
    ),
    path("campaigns/<str:pk>/seats/", seats.seats, name="seats"),
    path(
        "campaigns/<str:pk>/seats/<str:iid>/withdraw/",
        seats.invitation_withdraw_post,
        name="invitation_withdraw",
    ),
    path("campaigns/<str:pk>/whispers/", whispers.whispers, name="whispers"),
    path("campaigns/<str:pk>/whispers/post/", whispers.whisper_post, name="whisper_post"),
    path("campaigns/<str:pk>/notes/", notes.notes, name="notes"),
    path("campaigns/<str:pk>/notes/<str:tid>/", notes.note, name="note"),
    path("campaigns/<str:pk>/notes/<str:tid>/edit/", notes.note_edit, name="note_edit"),
    path("campaigns/<str:pk>/notes/<str:tid>/delete/", notes.note_remove, name="note_delete"),
    path("campaigns/<str:pk>/lore/", lore.lore, name="lore"),
    path("campaigns/<str:pk>/lore/merge/", lore.merge, name="lore_merge"),
    path("campaigns/<str:pk>/lore/bulk/", lore.bulk, name="lore_bulk"),
    path("campaigns/<str:pk>/lore/<str:lid>/", lore.entry_action, name="lore_entry"),
    path("campaigns/<str:pk>/lore/<str:lid>/history/", lore.entry_history, name="lore_history"),
    path("campaigns/<str:pk>/context/<str:role>/", context.inspector, name="context"),
    path("campaigns/<str:pk>/memory/", memory.memory, name="memory"),
    path("campaigns/<str:pk>/usage/", usage.usage, name="usage"),
    path("campaigns/<str:pk>/memory/<str:sid>/restore/", memory.restore, name="memory_restore"),
    path("campaigns/<int:experiment_id>/arena/", arena.arena_page, name="arena"),
    path("campaigns/<int:experiment_id>/arena/plot.png", arena.arena_plot_png, name="arena-plot"),
]
