"""Fewer index writes per turn (an import writes tens of thousands at once).

- The foreign key's own index on ``experiment_id`` goes: every other index of the table
  starts with that column, so it only cost a write per turn. Dropped by name in SQL:
  on SQLite an AlterField would rebuild the table, and with it lose the full-text
  triggers.
- ``(experiment, kind, speaker, seq)`` becomes ``(experiment, speaker, seq) WHERE kind =
  'monologue'``: its one reader, an agent's own monologues, now says the kind as SQL
  text (`campaigns.models.MONOLOGUE_KIND`), which a partial index needs.
"""

import django.db.models.deletion
from django.db import migrations, models

FK_INDEX = "campaigns_turn_experiment_id_4f9a6414"


class Migration(migrations.Migration):
    dependencies = [("campaigns", "0017_turn_search_deferred")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="turn",
                    name="experiment",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="turns",
                        to="campaigns.experiment",
                    ),
                )
            ],
            database_operations=[
                migrations.RunSQL(
                    f"DROP INDEX IF EXISTS {FK_INDEX}",
                    reverse_sql=f"CREATE INDEX {FK_INDEX} ON campaigns_turn (experiment_id)",
                )
            ],
        ),
        migrations.RemoveIndex(model_name="turn", name="turn_kind_speaker_seq"),
        migrations.AddIndex(
            model_name="turn",
            index=models.Index(
                condition=models.Q(kind="monologue"),
                fields=["experiment", "speaker", "seq"],
                name="turn_monologue_by_speaker",
            ),
        ),
    ]
