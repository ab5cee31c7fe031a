"""An index on (experiment, id): a campaign's lowest and highest turn id in one probe each.

SQLite's ranked retrieval bounds each word's full-text walk to that id span and, when the
campaign's turns fill most of it, walks the word's own doclist instead of intersecting it
with the campaign's `xexpN` token (`campaigns.reads.search`). A plain index: SQLite adds
it without rebuilding the table, so no trigger needs re-creating.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("campaigns", "0031_transcript_upload"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="turn",
            index=models.Index(fields=["experiment", "id"], name="turn_exp_id"),
        ),
    ]
