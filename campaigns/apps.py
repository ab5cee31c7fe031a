from django.apps import AppConfig


class CampaignsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "campaigns"
    verbose_name = "Campaigns"

    def ready(self) -> None:
        # Registers the `readable_by` JSON lookup used by campaigns.reads.selectors.
        from campaigns.reads import lookups  # noqa: F401
