"""A retrieval pin feeds the next pack of its role, so writing one changes
`Experiment.pack_version` like every other table a pack reads (see 0011)."""

from django.db import migrations

TABLE = "campaigns_retrievalpin"
EVENTS = (("INSERT", "new"), ("UPDATE", "new"), ("DELETE", "old"))


def _sqlite_forward() -> list[str]:
    statements = []
    for event, row in EVENTS:
        where = f"id = {row}.experiment_id"
        if event == "UPDATE":
            where = "id IN (new.experiment_id, old.experiment_id)"
        statements.append(
            f"CREATE TRIGGER {TABLE}_packv_{event.lower()} AFTER {event} ON {TABLE} BEGIN "
            "UPDATE campaigns_experiment SET pack_version = lower(hex(randomblob(16))) "
            f"WHERE {where}; END"
        )
    return statements


def _pg_forward() -> list[str]:
    refs = {
        "INSERT": "NEW TABLE AS new_rows",
        "UPDATE": "NEW TABLE AS new_rows OLD TABLE AS old_rows",
        "DELETE": "OLD TABLE AS old_rows",
    }
    return [
        f"CREATE TRIGGER {TABLE}_packv_{event.lower()} AFTER {event} ON {TABLE} "
        f"REFERENCING {refs[event]} FOR EACH STATEMENT "
        "EXECUTE FUNCTION babel_bump_pack_version()"
        for event, _ in EVENTS
    ]


def _backward(vendor: str) -> list[str]:
    on = f" ON {TABLE}" if vendor == "postgresql" else ""
    return [f"DROP TRIGGER IF EXISTS {TABLE}_packv_{e.lower()}{on}" for e, _ in EVENTS]


def forward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    build = {"sqlite": _sqlite_forward, "postgresql": _pg_forward}.get(vendor)
    for statement in build() if build else ():
        schema_editor.execute(statement)


def backward(apps, schema_editor):
    for statement in _backward(schema_editor.connection.vendor):
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("campaigns", "0012_memory_vocabulary")]

    operations = [migrations.RunPython(forward, backward)]
