"""/checkpoint, /compress and /clear as engine operations (SPEC §5.3), and what to load.

The Django side records a ContextEvent and (for /checkpoint and /compress) asks the
summarizer for a new digest; the engine only needs the events to know which turns
have left the transcript:

- ``checkpoint`` at seq S: turns with seq <= S are covered by the digest. They leave
  the recent window (and hinge anchors), except the last ``MIN_WINDOW_TURNS`` window
  turns, so the agent never loses the scene it is in. Strain is computed over what
  remains, so it resets.
- ``clear`` at seq S: the same cut, but the digest was *not* updated (the event says
  ``cleared_without_checkpoint``): what was cut is simply gone from the pack.
- ``compress``: the digest is updated, the window is untouched.

The agent's own last two monologues are not transcript and survive both cuts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from context_engine.types import ContextEventView, HistoryNeeds, PackConfig

MIN_WINDOW_TURNS = 4
CUTTING_COMMANDS = ("checkpoint", "clear")

# Per-strategy fixed window sizes (turn counts), shared with the strategies.
STRUCTURED_WINDOW_TURNS = 4
TRIAGE_FULL_TURNS = 3
TRIAGE_BULLET_UNTIL = 10
# layered: besides its window, the newest turns a pack may extend its recent window with
# when retrieval leaves budget unused (lending, SPEC §5): about one turn per this many
# tokens of the total budget, at most `LENDING_TURNS_MAX`.
LENDING_TOKENS_PER_TURN = 60
LENDING_TURNS_MAX = 160


@dataclass(frozen=True)
class Cut:
    """The latest transcript cut: turns with ``seq <= seq`` left the window."""

    command: str  # checkpoint | clear
    seq: int
    round: int

    @property
    def reason(self) -> str:
        if self.command == "checkpoint":
            return "covered by the digest since the last /checkpoint"
        # No seq or round: the command's seq counts every turn of the campaign, hidden
        # ones too, and its round is the newest of any turn's.
        return "dropped by the last /clear (not in the digest)"


def command_cut(events: tuple[ContextEventView, ...]) -> Cut | None:
    """The most recent /checkpoint or /clear (by seq; later in the tuple wins ties)."""
    best: tuple[int, int, ContextEventView] | None = None
    for index, event in enumerate(events):
        if event.command not in CUTTING_COMMANDS:
            continue
        key = (event.seq, index)
        if best is None or key > best[:2]:
            best = (event.seq, index, event)
    if best is None:
        return None
    event = best[2]
    return Cut(command=event.command, seq=event.seq, round=event.round)


def history_needs(
    config: PackConfig, current_round: int, events: tuple[ContextEventView, ...] = ()
) -> HistoryNeeds:
    """What the Django side must load for one pack, so no strategy but ``full_history``
    ever reads the whole history (a pack must build in <= 20 ms at 50,000 turns).

    The loader returns the union of the rules in `HistoryNeeds`, audience-filtered in
    SQL; the engine filters again, so loading a little more is safe, never needed.
    """
    needs = _needs(config, current_round)
    cut = command_cut(events)
    return replace(
        needs,
        cut_seq=cut.seq if cut else None,
        unreadable_whispers=config.show_whisper_existence,
    )


def lending_turns(config: PackConfig) -> int:
    """How far back (in transcript turns) ``layered``'s window may reach with lent room."""
    if not config.lend_unused_budget:
        return 0
    return min(config.total_budget // LENDING_TOKENS_PER_TURN, LENDING_TURNS_MAX)


def _needs(config: PackConfig, current_round: int) -> HistoryNeeds:
    cut_seq = None
    window_from = current_round - config.hot_window_rounds + 1
    from context_engine.retrieval import preset

    hits = preset(config.retrieval_preset)
    strategy = config.strategy
    if strategy == "full_history":
        return HistoryNeeds(full=True, cut_seq=cut_seq)
    if strategy == "sliding_window":
        return HistoryNeeds(
            last_turns=max(config.window_turns, 0), monologue_count=2, cut_seq=cut_seq
        )
    if strategy == "rolling_summary":
        return HistoryNeeds(from_round=window_from, monologue_count=2, cut_seq=cut_seq)
    if strategy == "structured_state":
        return HistoryNeeds(last_turns=STRUCTURED_WINDOW_TURNS, monologue_count=2, cut_seq=cut_seq)
    if strategy == "triage":
        return HistoryNeeds(last_turns=TRIAGE_BULLET_UNTIL, monologue_count=2, cut_seq=cut_seq)
    if strategy == "tiered":
        return HistoryNeeds(
            from_round=window_from,
            monologue_count=2,
            retrieval_candidates=hits.hits,
            retrieval_neighbours=hits.neighbours,
            retrieval_first_neighbours=hits.first_neighbours,
            cut_seq=cut_seq,
        )
    if strategy == "layered":
        hinge_from = current_round - config.hinge_ttl_rounds if config.hinge_quota > 0 else None
        return HistoryNeeds(
            from_round=window_from,
            hinge_from_round=hinge_from,
            last_turns=lending_turns(config),
            monologue_count=2,
            retrieval_candidates=hits.hits,
            retrieval_neighbours=hits.neighbours,
            retrieval_first_neighbours=hits.first_neighbours,
            cut_seq=cut_seq,
        )
    raise ValueError(f"Unknown strategy {strategy!r}.")


# --- active retrieval lines (SPEC §5.8) ---------------------------------------------------
# `/search QUERY`, `/lore TERM`, `/timeline FROM..TO` typed in the console's composer or
# written by an agent as a line of its answer. Parsing is here (pure) so the console and
# the relay's tool read them the same way; running them is `campaigns…retrieval`.

RETRIEVAL_COMMANDS = ("search", "lore", "timeline")
_COMMAND_LINE = re.compile(r"^\s*/([A-Za-z]+)(?:[ \t]+(.*?))?\s*$")


@dataclass(frozen=True)
class RetrievalLine:
    command: str  # search | lore | timeline, or the unknown word as typed
    query: str

    @property
    def known(self) -> bool:
        return self.command in RETRIEVAL_COMMANDS


def retrieval_line(text: str) -> RetrievalLine | None:
    """``/word rest`` as a command line (``None`` for ordinary text).

    Only a single line that starts with ``/`` and a word counts, so prose that merely
    contains a slash ("and/or") is never taken for a command.
    """
    if "\n" in text.strip():
        return None
    match = _COMMAND_LINE.match(text)
    if not match:
        return None
    return RetrievalLine(match.group(1).lower(), " ".join((match.group(2) or "").split()))


def split_retrieval_lines(text: str) -> tuple[tuple[RetrievalLine, ...], str]:
    """An agent's answer as (its known retrieval command lines, the rest of its text).

    Every known command line is taken out wherever it stands, so a command is never
    stored as (part of) a turn; other lines are kept exactly as written.
    """
    commands: list[RetrievalLine] = []
    rest: list[str] = []
    for line in text.splitlines():
        parsed = retrieval_line(line)
        if parsed is not None and parsed.known:
            commands.append(parsed)
        else:
            rest.append(line)
    return tuple(commands), "\n".join(rest)
