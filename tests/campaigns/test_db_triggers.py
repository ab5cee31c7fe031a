"""The database triggers the app relies on survive every migration.

SQLite rebuilds a table to alter it, and the rebuild drops the table's triggers: a later
migration that adds a constraint to a table with pack-version or term-row triggers must
put them back (`campaigns/migrations/_sqlite_triggers.py`). This lists what must exist.
"""

import importlib

import pytest
from django.db import connection

pytestmark = pytest.mark.django_db

PACK_VERSION = importlib.import_module("campaigns.migrations.0011_speed_experiment_pack_version")
PACKED_TABLES = (*PACK_VERSION.CHILDREN, "campaigns_retrievalpin")
# New turns skip the SQLite pack-version trigger (the cache key holds the seq already).
SQLITE_SKIPPED = {f"{table}_packv_{event.lower()}" for table, event in PACK_VERSION.SQLITE_SKIP}


def expected_triggers() -> set[str]:
    names = {
        f"{table}_packv_{event}"
        for table in PACKED_TABLES
        for event in ("insert", "update", "delete")
    }
    names.add("campaigns_experiment_packv_update")
    # A turn's term rows, which ranked retrieval reads (migrations 0037, 0038).
    names |= {f"turn_terms_{event}" for event in ("insert", "update", "delete")}
    if connection.vendor == "sqlite":
        names -= SQLITE_SKIPPED
    else:  # "a turn's experiment exists", in place of the foreign key (migration 0020)
        names |= {"turn_experiment_exists", "turn_experiment_fixed", "experiment_turns_gone"}
        names.add("turn_terms_truncate")
    return names


def installed_triggers() -> set[str]:
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        else:
            cursor.execute("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal")
        return {row[0] for row in cursor.fetchall()}


def test_every_pack_version_search_and_experiment_trigger_exists_after_all_migrations():
    missing = expected_triggers() - installed_triggers()
    assert not missing, f"triggers dropped by a migration: {sorted(missing)}"
