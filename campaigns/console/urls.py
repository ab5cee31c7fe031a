from django.urls import path

from campaigns.console import arena

app_name = "console"

urlpatterns = [
    path("campaigns/<int:experiment_id>/arena/", arena.arena_page, name="arena"),
    path("campaigns/<int:experiment_id>/arena/plot.png", arena.arena_plot_png, name="arena-plot"),
]
