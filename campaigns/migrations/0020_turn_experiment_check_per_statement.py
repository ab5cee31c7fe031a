"""PostgreSQL: a turn's experiment is checked once per statement, not once per row.

The foreign key from campaigns_turn to campaigns_experiment ran its check as a query of
its own for every inserted row, at commit: 24,000 of them (0.12 s, one core, after
everything else) for a 24,000-turn import. The same rule is now three triggers:

- after an INSERT into campaigns_turn (statement level, over the inserted rows): lock
  every experiment the rows name, as the foreign key did (FOR KEY SHARE: a concurrent
  delete of it waits for this transaction, then finds these turns), and fail if one
  does not exist;
- before an UPDATE that would move a turn to another experiment: fail (nothing moves
  turns; the foreign key would have checked the new one);
- after a DELETE from campaigns_experiment (statement level): fail if any turn still
  names a deleted experiment (the ORM deletes the turns first; this catches anything
  that does not).

All three raise foreign_key_violation (SQLSTATE 23503), which Django reports as an
IntegrityError, as it did the foreign key's. Unlike the foreign key, the insert check is
not deferred to commit: a turn must name an experiment that exists when it is written
(every writer creates the experiment first). SQLite keeps its foreign key: its check is
a cheap in-process lookup. The model says ``db_constraint=False``, so Django does not
look for the constraint it no longer has.
"""

import django.db.models.deletion
from django.db import migrations, models

CHECK_FUNCTION = """
CREATE OR REPLACE FUNCTION babel_turn_experiment_exists() RETURNS trigger AS $$
BEGIN
    PERFORM 1 FROM campaigns_experiment e
    WHERE e.id IN (SELECT DISTINCT experiment_id FROM new_rows)
    ORDER BY e.id FOR KEY SHARE OF e;
    IF EXISTS (
        SELECT 1 FROM new_rows n
        WHERE NOT EXISTS (SELECT 1 FROM campaigns_experiment e WHERE e.id = n.experiment_id)
    ) THEN
        RAISE EXCEPTION USING ERRCODE = 'foreign_key_violation',
            MESSAGE = 'insert on campaigns_turn: its experiment_id is not an experiment',
            CONSTRAINT = 'turn_experiment_exists';
    END IF;
    RETURN NULL;
END $$ LANGUAGE plpgsql
"""
FIXED_FUNCTION = """
CREATE OR REPLACE FUNCTION babel_turn_experiment_fixed() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'foreign_key_violation',
        MESSAGE = 'update on campaigns_turn: a turn cannot move to another experiment',
        CONSTRAINT = 'turn_experiment_fixed';
END $$ LANGUAGE plpgsql
"""
GONE_FUNCTION = """
CREATE OR REPLACE FUNCTION babel_experiment_turns_gone() RETURNS trigger AS $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM campaigns_turn t WHERE t.experiment_id IN (SELECT id FROM old_rows)
    ) THEN
        RAISE EXCEPTION USING ERRCODE = 'foreign_key_violation',
            MESSAGE = 'delete on campaigns_experiment: turns still belong to it',
            CONSTRAINT = 'experiment_turns_gone';
    END IF;
    RETURN NULL;
END $$ LANGUAGE plpgsql
"""
DROP_FOREIGN_KEY = """
DO $$
DECLARE name text;
BEGIN
    FOR name IN
        SELECT conname FROM pg_constraint
        WHERE conrelid = 'campaigns_turn'::regclass AND contype = 'f'
          AND confrelid = 'campaigns_experiment'::regclass
    LOOP
        EXECUTE format('ALTER TABLE campaigns_turn DROP CONSTRAINT %I', name);
    END LOOP;
END $$
"""
PG_FORWARD = [
    CHECK_FUNCTION,
    FIXED_FUNCTION,
    GONE_FUNCTION,
    DROP_FOREIGN_KEY,
    "CREATE TRIGGER turn_experiment_exists AFTER INSERT ON campaigns_turn "
    "REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT "
    "EXECUTE FUNCTION babel_turn_experiment_exists()",
    "CREATE TRIGGER turn_experiment_fixed BEFORE UPDATE OF experiment_id ON campaigns_turn "
    "FOR EACH ROW WHEN (OLD.experiment_id IS DISTINCT FROM NEW.experiment_id) "
    "EXECUTE FUNCTION babel_turn_experiment_fixed()",
    "CREATE TRIGGER experiment_turns_gone AFTER DELETE ON campaigns_experiment "
    "REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT "
    "EXECUTE FUNCTION babel_experiment_turns_gone()",
]
PG_BACKWARD = [
    "DROP TRIGGER IF EXISTS experiment_turns_gone ON campaigns_experiment",
    "DROP TRIGGER IF EXISTS turn_experiment_fixed ON campaigns_turn",
    "DROP TRIGGER IF EXISTS turn_experiment_exists ON campaigns_turn",
    "DROP FUNCTION IF EXISTS babel_experiment_turns_gone()",
    "DROP FUNCTION IF EXISTS babel_turn_experiment_fixed()",
    "DROP FUNCTION IF EXISTS babel_turn_experiment_exists()",
    "ALTER TABLE campaigns_turn ADD CONSTRAINT campaigns_turn_experiment_id_4f9a6414_fk_campaigns "
    "FOREIGN KEY (experiment_id) REFERENCES campaigns_experiment (id) "
    "DEFERRABLE INITIALLY DEFERRED",
]


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in PG_FORWARD:
            schema_editor.execute(statement, params=None)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in PG_BACKWARD:
            schema_editor.execute(statement, params=None)


class Migration(migrations.Migration):
    dependencies = [("campaigns", "0019_turn_fts_no_column_sizes")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="turn",
                    name="experiment",
                    field=models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="turns",
                        to="campaigns.experiment",
                    ),
                )
            ],
            database_operations=[migrations.RunPython(forward, backward)],
        )
    ]
