"""The relay (SPEC §6): run one round of the campaign, agent by agent.

A round: the DM narrates, each player acts in ``order``, then the DM answers the
whispers it received this round (skipped when there are none). Each step builds the
speaker's pack (`pack_for_role`, input = `step_instruction`), calls its model through the
one messages builder with retries on transient errors, parses the answer
(`context_engine.agent_output`) and stores the turns with `turn_create`, which also
dispatches the memory work (hydrator, summarizer) after commit.

Guarantees:

- Every step has an idempotency key ``(experiment, round, step, speaker)``: a `RoundStep`
  row committed in the same transaction as the step's turns and the Job's record of it.
  A second commit of the same step fails on the key's unique constraint and stores
  nothing, so re-running a round (a redelivered task, a resumed round racing a slow
  worker) resumes from the first step with no row: no turn duplicated or lost, even if
  a worker died between the model call and the commit. The model is called outside any
  transaction: no lock is held while a model thinks.
- A step whose model fails (after retries on timeouts, 429 and 5xx; at once on other
  errors) or whose turns cannot be stored is **recorded, not skipped silently**: a
  ``system`` turn visible to the DM roles says which agent failed and why, and the round
  goes on with the next agent. Turns already stored are never touched.
- Humans (model ``human``) take their own turn. When the round reaches a human's step
  the Job goes ``waiting`` ("waiting for ROLE") and the task returns, freeing the worker.
  That human's post into the open round (`human_turn_create`, API or console) stores the
  step and dispatches the continuation. ``config.human_timeout_s`` schedules
  `human_timeout`; ``config.human_timeout_policy`` says what happens then: ``skip`` (a
  DM-only system note says ROLE did not act) or ``narrate`` (the DM's model narrates the
  hesitation; a human DM gets the note). Whichever comes first stores the step; the other
  finds the key taken and does nothing.
- The Job ends ``succeeded`` when at least one step stored its turns, ``failed`` (with
  the last error) when none could; its ``result`` lists every step. A failed round did
  not happen: the clock goes back to the round before and the round's step rows go, so
  the next run plays the same round whole (`_Round.close_failed`; DM-only failure notes
  stay).
- Each pack fits its model's window (`campaigns.services.windows`, `relay.fitting`): a
  server's "too long" is never resent unchanged (once more on a smaller pack, then the
  step fails saying so); a model whose provider this process cannot reach fails its
  step, never plays offline; every call, answered or not, is in the usage records.
- Weak output (`context_engine.weak_output`): items that only echo the format
  instructions are dropped, never stored as turns; an answer with nothing usable left
  gets one repair request (its text quoted back, keyed ``:repair`` in usage); what is
  still unusable is held for the DM's review, and the step's ``held``/``held_reasons``/
  ``repaired`` and the round's message say how many and why. The DM's answer step names
  each whisperer with the first words of their whispers to the DM.
- One round at a time per experiment: `round_create` takes the experiment's row lock
  (the lock `turn_create` takes) before looking for an active round job (pending,
  running or waiting), so two concurrent starts serialise and the second gets a
  ValidationError.
- A round whose worker died resumes: a pending or running Job with no progress for
  ``BABEL_ROUND_STALE_S`` seconds (default: the task's hard time limit, longer than any
  live run can go quiet) is picked up again by `round_start` (the "Run round" button or
  ``POST /rounds/``, which then returns that Job) and by a redelivered task.
- `round_run` claims its Job with a conditional UPDATE (pending, or stale running →
  running): a duplicated task finds it claimed and returns without running the round.
"""

from campaigns.services.relay.common import (
    ACTIVE,
    ALREADY_RUNNING,
    PLAYING,
    ROUND_SOFT_TIME_LIMIT,
    ROUND_TIME_LIMIT,
    WAITING_FOR,
    stale_after,
)
from campaigns.services.relay.humans import (
    human_skip,
    human_timeout,
    human_turn_create,
    plays_seat,
    waiting_for,
)
from campaigns.services.relay.rounds import check_cast, round_create, round_run, round_start

__all__ = [
    "ACTIVE",
    "ALREADY_RUNNING",
    "PLAYING",
    "ROUND_SOFT_TIME_LIMIT",
    "ROUND_TIME_LIMIT",
    "WAITING_FOR",
    "check_cast",
    "human_skip",
    "human_timeout",
    "human_turn_create",
    "plays_seat",
    "round_create",
    "round_run",
    "round_start",
    "stale_after",
    "waiting_for",
]
