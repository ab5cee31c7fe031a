"""One round of the relay, engine side: the steps, what each agent is told, and the
offline agent (SPEC §6).

A round is: the DM narrates, each player acts in turn order, then the DM answers the
whispers it received this round. `step_instruction` is the *input* of the speaker's
pack for that step: a short instruction plus the answer format of
`context_engine.agent_output`, sized to stay well inside the input section's budget.

`OfflineAgent` answers when an agent's model resolves to the offline client (no key, no
server): deterministic, no network, always in the format, so a campaign can run rounds
end to end with no API key. It only ever writes public text built from templates and the
public cast list — never text copied out of its pack, which may hold things (GM notes,
whispers, a secret) that its public output must not repeat.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from context_engine.render import to_openai_messages
from context_engine.types import Pack

NARRATE = "narrate"
ACT = "act"
ANSWER = "answer"
HESITATE = "hesitate"  # the DM narrates a human who did not act in time (issue 11)
STEP_KINDS = (NARRATE, ACT, ANSWER, HESITATE)


@dataclass(frozen=True)
class Whisper:
    """A whisper the DM answers: who sent it, in which round, and its text (the answer
    step's instruction quotes its first words)."""

    speaker: str
    round: int
    text: str


WHISPER_QUOTE_WORDS = 12  # the first words of a whisper the answer step quotes


@dataclass(frozen=True)
class Step:
    """One agent call of a round.

    ``players`` are the acting players in order (for the DM's narration); ``whisperers``
    the players whose whispers the DM answers (``answer`` steps only), and ``whispers``
    what they whispered to the DM (`Whisper`, whispers whose audience includes the DM
    only); ``absent`` the human whose hesitation the DM narrates (``hesitate`` steps only).
    """

    kind: str
    role: str
    speaker_kind: str
    round: int
    dm_role: str = "DM"
    players: tuple[str, ...] = ()
    whisperers: tuple[str, ...] = ()
    absent: str = ""
    whispers: tuple[Whisper, ...] = ()

    @property
    def label(self) -> str:
        """What the progress bar says while this step runs."""
        return {
            NARRATE: f"{self.role} narrating…",
            ACT: f"{self.role} acting…",
            ANSWER: f"{self.role} answering whispers…",
            HESITATE: f"{self.role} narrating {self.absent}'s hesitation…",
        }[self.kind]


PLAYER_FORMAT = (
    "Answer only with blocks, each starting on its own line with its label:\n"
    "PUBLIC: what everyone sees you do or say.\n"
    "WHISPER to {dm}: a private message (recipients after 'to', comma-separated; "
    "the DM reads every player whisper).\n"
    "MONOLOGUE: your private thoughts; no one else ever reads them.\n"
    "After a block you may add 'TAGS: npc:Name, thread:topic' and a line 'HINGE' "
    "if it is a turning point. Text outside the blocks is not shown to the others."
)

DM_FORMAT = (
    "Answer only with blocks, each starting on its own line with its label:\n"
    "PUBLIC: narration everyone reads.\n"
    "CHOICE: the options you offer the players (everyone reads it).\n"
    "WHISPER to NAME: a private message to the named players, comma-separated.\n"
    "GM NOTE: private notes only the DM reads.\n"
    "MONOLOGUE: your private thoughts.\n"
    "After a block you may add 'TAGS: npc:Name, thread:topic' and a line 'HINGE' "
    "if it is a turning point. Text outside the blocks is not shown to the players."
)


MEMORY_TOOL = (
    "Memory lookup (optional, once per step): instead of answering, reply with only lines "
    "'/search QUERY', '/lore TERM' or '/timeline FROM..TO' (round numbers). You then get "
    "this request again with what you may read of the results under 'Retrieved memories', "
    "and give your real answer. Lookup lines are never shown to anyone."
)


def step_instruction(step: Step) -> str:
    """The pack input for one step: what to do now, the answer format, and the memory
    tool (`campaigns.services.relay_tools` runs the lookup lines an agent sends)."""
    return f"{_step_task(step)}\n\n{MEMORY_TOOL}"


def _step_task(step: Step) -> str:
    if step.kind == NARRATE:
        cast = ", ".join(step.players) or "the players"
        task = (
            f"Round {step.round} begins. Narrate what happens next for {cast}, "
            "building on what they did last, and end by offering a choice."
        )
        return f"{task}\n\n{DM_FORMAT}"
    if step.kind == ANSWER:
        return f"{_answer_task(step)}\n\n{DM_FORMAT}"
    if step.kind == HESITATE:
        task = (
            f"Round {step.round}: {step.absent} hesitates and does not act this time. "
            f"Narrate that moment briefly in one PUBLIC block; do not act or speak for "
            f"{step.absent}."
        )
        return f"{task}\n\n{DM_FORMAT}"
    if step.kind == ACT:
        task = (
            f"Round {step.round}: your turn, {step.role}. Act once, in character, "
            "reacting to the DM's latest narration."
        )
        return f"{task}\n\n{PLAYER_FORMAT.format(dm=step.dm_role)}"
    raise ValueError(f"Unknown step kind {step.kind!r}; kinds: {', '.join(STEP_KINDS)}.")


def _first_words(text: str, count: int = WHISPER_QUOTE_WORDS) -> str:
    words = text.split()
    head = " ".join(words[:count])
    return f"{head}…" if len(words) > count else head


def _answer_task(step: Step) -> str:
    """The DM's answer step: each whisperer by name, with the round and first words of
    each of their whispers, and one 'WHISPER to NAME:' block asked for per whisperer."""
    lines = [f"Round {step.round}: answer the whispers the players sent you."]
    for name in step.whisperers:
        theirs = [w for w in step.whispers if w.speaker == name]
        quoted = "; ".join(f'round {w.round}: "{_first_words(w.text)}"' for w in theirs)
        lines.append(f"- {name} whispered to you" + (f" ({quoted})" if quoted else ""))
    blocks = " ".join(f"'WHISPER to {name}:'" for name in step.whisperers)
    lines.append(
        f"Write one block per whisperer: {blocks}. Answer privately; reveal only what "
        "that player may know. Add a GM NOTE if you need to remember something."
    )
    return "\n".join(lines)


def repair_instruction(step: Step, answer: str, *, limit: int = 1500) -> str:
    """The one repair request for an answer with no usable labels: the step's task and
    format again, the answer quoted back (its first ``limit`` characters), and the ask to
    rewrite it with the labels."""
    quoted = answer.strip()
    if len(quoted) > limit:
        quoted = quoted[:limit] + " […]"
    return (
        f"{_step_task(step)}\n\n"
        "Your answer to this step had no labelled blocks, so it cannot be shown to anyone. "
        "Rewrite the same answer now in the format above: each block on its own line "
        "starting with its label. Write your own words, not the format's descriptions.\n"
        f"Your answer was:\n<<<\n{quoted}\n>>>"
    )


_SCENES = (
    "The light changes: shadows stretch across the way ahead and something stirs beyond them",
    "A distant bell tolls twice, and every sound around the party falls silent for a moment",
    "Cold air breathes out of the stone, carrying the smell of salt and old paper",
    "Footsteps echo somewhere close, stop, and do not start again",
    "The ground trembles once; dust sifts down and a new path opens to one side",
    "Water drips in a slow rhythm, and the walls here are carved with unfamiliar marks",
)
_CHOICES = (
    "press forward, search what is around you, or stop and talk it over",
    "follow the sound, hold your ground, or look for another way",
    "split up to cover more ground, stay together, or turn back",
)
_ACTIONS = (
    "studies the way ahead and keeps close to the others",
    "checks their gear and asks the others what they have noticed",
    "steps forward carefully, testing the ground before each step",
    "keeps watch while the others work, ready to call a warning",
    "examines the nearest markings and reads them aloud for everyone",
    "lights a lamp and holds it high so the whole party can see",
)
_QUESTIONS = (
    "is there anything here that only I would notice?",
    "can I tell whether we are being followed?",
    "what do I know about this place that the others might not?",
)
_THOUGHTS = (
    "Stay calm and watch who moves first.",
    "Keep your own counsel until you know more.",
    "Something about this place feels wrong; be ready.",
)
_DETAILS = (
    "you notice a faint draught from a crack no one else has seen",
    "you hear footsteps that stop whenever the party stops",
    "you recall a story about this place: it was sealed for a reason",
    "you see that one of the marks on the wall is freshly cut",
)


def _pick(options: tuple[str, ...], seed: int, salt: str) -> str:
    """One option, chosen by the pack's fingerprint mixed with what is being chosen."""
    mixed = hashlib.sha256(f"{seed}:{salt}".encode()).hexdigest()
    return options[int(mixed[:8], 16) % len(options)]


def pack_fingerprint(pack: Pack) -> int:
    """A stable number from exactly what the agent was sent (its rendered messages)."""
    digest = hashlib.sha256()
    for message in to_openai_messages(pack):
        digest.update(message["role"].encode())
        digest.update(b"\0")
        digest.update(message["content"].encode())
        digest.update(b"\0")
    return int(digest.hexdigest()[:12], 16)


class OfflineAgent:
    """A deterministic agent for the no-key default: same pack and step, same answer.

    The DM narrates (PUBLIC), offers a CHOICE and keeps a GM NOTE; each player acts
    (PUBLIC), whispers a question to the DM and thinks a MONOLOGUE; the DM answers each
    whisper privately. The variant is picked from a hash of the pack the agent received.
    """

    offline = True
    model = "offline"

    def __init__(self, *, tools: bool = False):
        self.tools = tools

    def respond(self, pack: Pack, step: Step, *, looked_up: bool = False) -> str:
        """The answer to ``pack``. With ``tools`` (the experiment's ``offline_agent_tools``)
        the DM first asks for this round's timeline before answering whispers, so the
        relay's memory tool runs offline too; ``looked_up`` is the second call."""
        if self.tools and step.kind == ANSWER and not looked_up:
            return f"/timeline {step.round}..{step.round}"
        seed = pack_fingerprint(pack)
        if step.kind == NARRATE:
            cast = ", ".join(step.players) or "the party"
            return "\n".join(
                [
                    f"PUBLIC: Round {step.round}. {_pick(_SCENES, seed, 'scene')}.",
                    f"CHOICE: {cast}: {_pick(_CHOICES, seed, 'choice')}?",
                    f"GM NOTE: Round {step.round}: keep the pressure steady; "
                    "nothing has been revealed yet.",
                ]
            )
        if step.kind == ANSWER:
            blocks = [
                f"WHISPER to {role}: Only you, {role}: {_pick(_DETAILS, seed, f'detail:{role}')}."
                for role in step.whisperers
            ]
            blocks.append(
                f"GM NOTE: Round {step.round}: answered "
                f"{', '.join(step.whisperers) or 'no one'} in private."
            )
            return "\n".join(blocks)
        if step.kind == HESITATE:
            return (
                f"PUBLIC: {step.absent} hesitates; the moment stretches, and the others "
                "go on without them."
            )
        if step.kind == ACT:
            return "\n".join(
                [
                    f"PUBLIC: {step.role} {_pick(_ACTIONS, seed, 'action')}.",
                    f"WHISPER to {step.dm_role}: {step.role} asks quietly: "
                    f"{_pick(_QUESTIONS, seed, 'question')}",
                    f"MONOLOGUE: {_pick(_THOUGHTS, seed, 'thought')}",
                ]
            )
        raise ValueError(f"Unknown step kind {step.kind!r}.")
