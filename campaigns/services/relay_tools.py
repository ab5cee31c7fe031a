"""The relay's memory tool (SPEC §5.8, issue 10 ask 6): agents may look things up.

Every step instruction offers it (`context_engine.relay.MEMORY_TOOL`): an agent may
answer with lines ``/search QUERY``, ``/lore TERM`` or ``/timeline FROM..TO`` instead of
its blocks. `answer_with_memory` then

1. runs each lookup (at most `MAX_LOOKUPS`) as the agent's own role through
   `retrieval_run`, the same service the API and the console call: results come from the
   visibility selector for that role, and their ids are pinned for its next pack;
2. rebuilds the agent's pack (now leading its retrieval section with the pinned
   snippets, re-read through the selector and cut to the section's budget), with a note
   in the input saying which lookups ran and which were refused (with the field's
   message — about the agent's own query, never about hidden turns);
3. asks the agent once more and returns that answer.

At most one tool round per step: lookup lines in the second answer are dropped unrun, so
a step costs at most two model calls. Lookup lines are never stored: they are taken out
of both answers before parsing (the relay stores only the blocks), and when the first
answer held blocks as well as lookups, those blocks are discarded — the second answer
is the agent's real one. The pins expire when the agent's turns of this step are stored
(a pin applies until the role's next own turn).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from django.core.exceptions import ValidationError

from campaigns.models import Experiment
from campaigns.reads.selectors import viewer_for_role
from campaigns.services.memory.retrieval import retrieval_run
from context_engine.commands import split_retrieval_lines
from context_engine.types import Pack

MAX_LOOKUPS = 3


@dataclass
class ToolRound:
    """What a step's agent finally answered, and the lookups it made on the way."""

    text: str
    lookups: list[dict] = field(default_factory=list)


def _message(exc: ValidationError) -> str:
    if hasattr(exc, "error_dict"):
        return "; ".join(f"{name}: {' '.join(msgs)}" for name, msgs in exc.message_dict.items())
    return " ".join(exc.messages)


def lookup_note(lookups: list[dict]) -> str:
    """The line added to the agent's input for its second call."""
    parts = []
    for item in lookups:
        line = f"/{item['command']} {item['query']}".strip()
        parts.append(f"{line} (refused: {item['error']})" if "error" in item else line)
    return (
        "Your lookups ran: " + "; ".join(parts) + ". What you may read of their results is "
        "under 'Retrieved memories'. Now give your real answer in the format above; "
        "no more lookups this step."
    )


def answer_with_memory(
    *,
    experiment: Experiment,
    role: str,
    text: str,
    rebuild: Callable[[str], Pack],
    ask: Callable[[Pack], str],
) -> ToolRound:
    """Run the lookups in ``text`` (an agent's first answer) and ask again (see module).

    ``rebuild(note)`` builds the role's pack with ``note`` added to its input;
    ``ask(pack)`` calls the agent's model and returns its text.
    """
    commands, rest = split_retrieval_lines(text)
    if not commands:
        return ToolRound(rest)
    viewer = viewer_for_role(experiment=experiment, role=role)
    lookups: list[dict] = []
    for line in commands[:MAX_LOOKUPS]:
        item = {"command": line.command, "query": line.query}
        try:
            retrieval_run(
                experiment=experiment,
                viewer=viewer,
                command=line.command,
                query=line.query,
                pin=True,
            )
        except ValidationError as exc:
            item["error"] = _message(exc)
        lookups.append(item)
    second = ask(rebuild(lookup_note(lookups)))
    _, final = split_retrieval_lines(second)  # one tool round per step: not run
    return ToolRound(final, lookups)
