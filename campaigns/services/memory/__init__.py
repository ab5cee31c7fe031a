"""Memory services: per-audience digests, strategic summaries, the World Bible hydrator,
term definitions and the /checkpoint, /compress, /clear commands (SPEC §4, §5.3–§5.6).

Celery tasks in `campaigns.tasks` call these by the same names; views and the API call
`run_command` and `summary_restore`. Every artifact here is made per audience from the
turns that audience may read, as the visibility selector decides.
"""

from campaigns.services.memory.audiences import (
    audience_of_role,
    audiences_for,
    turns_for_audience,
)
from campaigns.services.memory.commands import after_turn_created, memory_job_run, run_command
from campaigns.services.memory.digests import (
    latest_summary,
    strategic_update,
    summarize_audience,
    summarize_one,
    summary_restore,
)
from campaigns.services.memory.edits import edit_rehydrate
from campaigns.services.memory.hydrate import define_term, hydrate_experiment, hydrate_turn
from campaigns.services.memory.reveals import after_reveal, reveal_rederive

__all__ = [
    "after_reveal",
    "after_turn_created",
    "audience_of_role",
    "audiences_for",
    "define_term",
    "edit_rehydrate",
    "hydrate_experiment",
    "hydrate_turn",
    "latest_summary",
    "memory_job_run",
    "reveal_rederive",
    "run_command",
    "strategic_update",
    "summarize_audience",
    "summarize_one",
    "summary_restore",
    "turns_for_audience",
]
