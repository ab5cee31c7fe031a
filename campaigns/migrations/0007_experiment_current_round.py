from django.db import migrations, models
from django.db.models import Max


def set_clock_from_turns(apps, schema_editor):
    """Existing campaigns start with the clock at their highest stored round."""
    Experiment = apps.get_model("campaigns", "Experiment")
    for experiment in Experiment.objects.annotate(last=Max("turns__round")).iterator():
        if experiment.last:
            Experiment.objects.filter(pk=experiment.pk).update(current_round=experiment.last)


class Migration(migrations.Migration):
    dependencies = [("campaigns", "0006_job_one_active_round")]

    operations = [
        migrations.AddField(
            model_name="experiment",
            name="current_round",
            field=models.PositiveIntegerField(
                default=0,
                help_text=(
                    "The campaign clock: the open round. Only the owner, staff, the relay and "
                    "an import advance it; reveals, strain and retrieval read it."
                ),
            ),
        ),
        migrations.RunPython(set_clock_from_turns, migrations.RunPython.noop),
    ]
