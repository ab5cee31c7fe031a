"""`Experiment.pack_version`: a fresh random value after every write a pack reads.

Kept by database triggers, so every write path changes it — services, the admin,
`QuerySet.update()`, `bulk_create`, imports, raw SQL — and no Python code can forget
to. A random value rather than a counter: a rolled-back transaction can never leave
behind a version that a later write reuses. `campaigns.services.pack_cache` keys packs
on it.

PostgreSQL: statement-level triggers with transition tables (one UPDATE per statement,
however many rows it wrote). SQLite: row-level triggers (an in-process b-tree update).
"""

import uuid

from django.db import migrations, models

# Tables whose rows a pack reads, with their experiment column.
CHILDREN = (
    "campaigns_turn",
    "campaigns_loreentry",
    "campaigns_summary",
    "campaigns_participant",
    "campaigns_worldstate",
    "campaigns_contextevent",
    "campaigns_visibilitychange",
)
# Experiment columns a pack reads (pack_version itself is not one of them).
EXPERIMENT_COLUMNS = ("hook", "rules", "config", "current_round", "status")
SQLITE_NEW = "lower(hex(randomblob(16)))"
# A new turn always takes the experiment's next seq, which the cache key holds already
# (`pack_cache.stamp`): a row trigger there would cost every insert, imports included.
SQLITE_SKIP = {("campaigns_turn", "INSERT")}


def _sqlite_forward() -> list[str]:
    statements = []
    for table in CHILDREN:
        for event, row in (("INSERT", "new"), ("UPDATE", "new"), ("DELETE", "old")):
            if (table, event) in SQLITE_SKIP:
                continue
            name = f"{table}_packv_{event.lower()}"
            where = f"id = {row}.experiment_id"
            if event == "UPDATE":  # a row moved between experiments changes both
                where = "id IN (new.experiment_id, old.experiment_id)"
            statements.append(
                f"CREATE TRIGGER {name} AFTER {event} ON {table} BEGIN "
                f"UPDATE campaigns_experiment SET pack_version = {SQLITE_NEW} WHERE {where}; END"
            )
    columns = ", ".join(EXPERIMENT_COLUMNS)
    statements.append(
        f"CREATE TRIGGER campaigns_experiment_packv_update AFTER UPDATE OF {columns} "
        "ON campaigns_experiment BEGIN UPDATE campaigns_experiment "
        f"SET pack_version = {SQLITE_NEW} WHERE id = new.id; END"
    )
    return statements


def _sqlite_backward() -> list[str]:
    names = [
        f"{table}_packv_{event}"
        for table in CHILDREN
        for event in ("insert", "update", "delete")
    ]
    names.append("campaigns_experiment_packv_update")
    return [f"DROP TRIGGER IF EXISTS {name}" for name in names]


PG_FUNCTION = """
CREATE OR REPLACE FUNCTION babel_bump_pack_version() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE campaigns_experiment SET pack_version = gen_random_uuid()
        WHERE id IN (SELECT DISTINCT experiment_id FROM new_rows);
    ELSIF TG_OP = 'DELETE' THEN
        UPDATE campaigns_experiment SET pack_version = gen_random_uuid()
        WHERE id IN (SELECT DISTINCT experiment_id FROM old_rows);
    ELSE
        UPDATE campaigns_experiment SET pack_version = gen_random_uuid()
        WHERE id IN (SELECT experiment_id FROM new_rows UNION SELECT experiment_id FROM old_rows);
    END IF;
    RETURN NULL;
END $$ LANGUAGE plpgsql
"""
PG_EXPERIMENT_FUNCTION = """
CREATE OR REPLACE FUNCTION babel_experiment_pack_version() RETURNS trigger AS $$
BEGIN
    NEW.pack_version := gen_random_uuid();
    RETURN NEW;
END $$ LANGUAGE plpgsql
"""


def _pg_forward() -> list[str]:
    statements = [PG_FUNCTION, PG_EXPERIMENT_FUNCTION]
    for table in CHILDREN:
        for event, refs in (
            ("INSERT", "NEW TABLE AS new_rows"),
            ("UPDATE", "NEW TABLE AS new_rows OLD TABLE AS old_rows"),
            ("DELETE", "OLD TABLE AS old_rows"),
        ):
            statements.append(
                f"CREATE TRIGGER {table}_packv_{event.lower()} AFTER {event} ON {table} "
                f"REFERENCING {refs} FOR EACH STATEMENT "
                "EXECUTE FUNCTION babel_bump_pack_version()"
            )
    changed = " OR ".join(f"OLD.{c} IS DISTINCT FROM NEW.{c}" for c in EXPERIMENT_COLUMNS)
    statements.append(
        "CREATE TRIGGER campaigns_experiment_packv_update BEFORE UPDATE ON campaigns_experiment "
        f"FOR EACH ROW WHEN ({changed}) EXECUTE FUNCTION babel_experiment_pack_version()"
    )
    return statements


def _pg_backward() -> list[str]:
    statements = [
        f"DROP TRIGGER IF EXISTS {table}_packv_{event} ON {table}"
        for table in CHILDREN
        for event in ("insert", "update", "delete")
    ]
    statements.append(
        "DROP TRIGGER IF EXISTS campaigns_experiment_packv_update ON campaigns_experiment"
    )
    statements += [
        "DROP FUNCTION IF EXISTS babel_bump_pack_version()",
        "DROP FUNCTION IF EXISTS babel_experiment_pack_version()",
    ]
    return statements


def forward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    statements = {"sqlite": _sqlite_forward, "postgresql": _pg_forward}.get(vendor)
    for statement in statements() if statements else ():
        schema_editor.execute(statement)


def backward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    statements = {"sqlite": _sqlite_backward, "postgresql": _pg_backward}.get(vendor)
    for statement in statements() if statements else ():
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("campaigns", "0010_speed_turn_fts_newest_first")]

    operations = [
        migrations.AddField(
            model_name="experiment",
            name="pack_version",
            field=models.UUIDField(
                default=uuid.uuid4,
                editable=False,
                help_text=(
                    "Changes (to a fresh random value) on every write a pack reads; part of "
                    "the pack cache's key (campaigns.services.pack_cache)."
                ),
            ),
        ),
        migrations.RunPython(forward, backward),
    ]
