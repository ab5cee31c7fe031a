"""SQLite: the SQL function ``babel_terms(text)``, which the term rows' triggers and the
searches of a campaign still being indexed use (migration 0038).

It gives a JSON array of the text's distinct terms (`context_engine.ranking.terms`): the
stems the ranking and the Arena's in-memory replay use, so a word matches the same turns
in the database as in the replay. Registered on every SQLite connection Django opens
(`CampaignsConfig.ready`); a connection made without Django cannot write turns.
"""

from __future__ import annotations

import json

from context_engine.ranking import terms

SQL_NAME = "babel_terms"


def distinct_terms(text: str | None) -> str:
    """The JSON array of ``text``'s distinct terms, sorted."""
    return json.dumps(sorted(set(terms(text or ""))))


def register_sqlite_functions(sender, connection, **kwargs) -> None:
    """`connection_created` receiver: SQLite connections get ``babel_terms``."""
    if connection.vendor == "sqlite":
        connection.connection.create_function(SQL_NAME, 1, distinct_terms, deterministic=True)
