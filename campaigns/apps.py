from django.apps import AppConfig


class CampaignsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "campaigns"
    verbose_name = "Campaigns"

    def ready(self) -> None:
        # Registers the `readable_by` JSON lookup used by campaigns.reads.selectors.
        # Registers the Celery tasks in every process, eager ones included: services
        # send them by name (campaigns.services.dispatch) and never import them.
        from campaigns import tasks  # noqa: F401
        from campaigns.reads import lookups  # noqa: F401
