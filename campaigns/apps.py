from django.apps import AppConfig


class CampaignsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "campaigns"
    verbose_name = "Campaigns"

    def ready(self) -> None:
        # Registers the `readable_by` JSON lookup used by campaigns.reads.selectors.
        # Registers the Celery tasks in every process, eager ones included: services
        # send them by name (campaigns.services.dispatch) and never import them.
        from django.contrib.auth.signals import user_logged_out

        from campaigns import tasks  # noqa: F401
        from campaigns.reads import lookups  # noqa: F401
        from campaigns.services.tokens import revoke_on_logout

        # Signing out of the console revokes the user's API token (issue 23 ask 7).
        user_logged_out.connect(revoke_on_logout, dispatch_uid="campaigns.revoke_token")
