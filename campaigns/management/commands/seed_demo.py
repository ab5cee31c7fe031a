from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from campaigns import demo
from campaigns.models import Experiment
from campaigns.services import transcripts
from campaigns.services.memory import run_command

DEMO_PASSWORD = "lowmere-demo"
PLAYER_LOGINS = {"thorin": "Thorin", "cassia": "Cassia", "wren": "Wren"}


class Command(BaseCommand):
    help = "Load the demo campaign and demo logins. Idempotent: running it again changes nothing."

    def add_arguments(self, parser):
        parser.add_argument(
            "--no-logins", action="store_true", help="Load the campaign only, create no users."
        )

    def handle(self, *args, no_logins=False, **options):
        owner = None if no_logins else self._user("demo", staff=True)
        experiment = Experiment.objects.filter(name=demo.DEMO_NAME).first()
        if experiment is None:
            experiment = transcripts.import_transcript(data=demo.transcript(), owner=owner)
            self.stdout.write(f"Loaded demo campaign {experiment.name!r} (id {experiment.pk}).")
            # A bulk import is never hydrated turn by turn: one /checkpoint builds the World
            # Bible and every audience's digest (eagerly, or on the workers with REDIS_URL).
            job = run_command(experiment=experiment, command="checkpoint", user=owner)
            job.refresh_from_db()
            self.stdout.write(f"/checkpoint {job.status}: World Bible and digests.")
        else:
            self.stdout.write(f"Demo campaign already loaded (id {experiment.pk}).")
        if no_logins:
            return
        with transaction.atomic():
            for username, role in PLAYER_LOGINS.items():
                user = self._user(username, staff=False)
                experiment.participants.filter(role=role, user__isnull=True).update(user=user)
        self.stdout.write(
            "Logins (password for all: "
            f"{DEMO_PASSWORD}): demo (owner, admin), "
            + ", ".join(f"{u} (plays {r})" for u, r in PLAYER_LOGINS.items())
        )

    def _user(self, username: str, *, staff: bool):
        User = get_user_model()
        user, created = User.objects.get_or_create(
            username=username, defaults={"is_staff": staff, "is_superuser": staff}
        )
        if created:
            user.set_password(DEMO_PASSWORD)
            user.save(update_fields=["password"])
        return user
