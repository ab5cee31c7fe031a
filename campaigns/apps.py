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
        from django.db.backends.signals import connection_created

        from campaigns import tasks  # noqa: F401
        from campaigns.models.search_terms import register_sqlite_functions
        from campaigns.reads import lookups  # noqa: F401
        from campaigns.services.tokens import revoke_on_logout

        # SQLite's term rows are made by a Python function (migration 0038).
        connection_created.connect(register_sqlite_functions, dispatch_uid="campaigns.sqlite")

        # Signing out of the console revokes the user's API token (issue 23 ask 7).
        user_logged_out.connect(revoke_on_logout, dispatch_uid="campaigns.revoke_token")
