"""A seeded long campaign with planted facts of every kind, as a transcript dict.

`generate_campaign(rounds=200, players=4, seed=S)` returns a ``babel-transcript/1``
dict (import it with `campaigns.services.transcripts.import_transcript`). Each round:
the DM narrates, each player acts (public), with the occasional plain whisper. Planted,
each recorded as a ``facts`` entry whose answer strings are invented words that occur
nowhere else (so a leak check cannot be fooled by coincidence):

- coined terms introduced early (public narration + a confirmed DM lore entry) and
  asked about late (mentioned again near the end): ``term-*``;
- public turning points (hinge turns; the key term early in the first sentence) every
  ~12 rounds: ``hinge-*``;
- whispers player → DM (``[DM, player]``, tagged as a thread): ``whisper-*``;
- GM notes (``[DM]``, tagged as a thread): ``gmnote-*``;
- monologues (``[player]``; the fact in the first sentence): ``monologue-*``;
- each player's secret goal (owner only), one with a reveal round after which the
  same answer is public (``secret-*`` and ``secret-*-revealed``);
- an NPC, Lord Vane, who dies two thirds of the way in: his lore entry is invalidated
  from that round (not deleted), the death is a hinge, and the place of death gets a
  lore entry of its own.

Every turn has a key (``t1``, ``t2``, … in file order), and ``questions`` (evidence
recall, SPEC §5.7) name the turns that hold each answer; an answer of several parts
joins them with ``"; "``, each part standing in some evidence turn:

- ``single``: each coined term (asked where the stranger mentions it again) and each
  sworn oath;
- ``multi``: facts spread over rounds (Lord Vane's promise and his death; pairs of
  oaths);
- ``when``: the date a round states ("the 14th of Quorvex") as the party reaches a
  place;
- ``secret``: whispers (their two-role audience), GM notes (the DM) and monologues
  (their speaker): only that audience can read the evidence.

The date turns draw from a random stream of their own, so adding them changed nothing
else a seed generates.
"""

from __future__ import annotations

import random
from typing import Any

from context_engine.arena.elements import lore_entry, participant, turn_item

FORMAT = "babel-transcript/1"
PLAYER_NAMES = ("Thorin", "Cassia", "Wren", "Ossian", "Brannoc", "Ilse", "Garrick", "Mireth")
# fmt: off
_SYLLABLES = (
    "brin", "wick", "quor", "vex", "thal", "myr", "zan", "krov", "ulm", "drae",
    "phel", "skarn", "yth", "gorv", "lunt", "qesh", "orv", "taz", "plix", "hurn",
)
# fmt: on
_PLACES = (
    "the old mill",
    "the river road",
    "the chapel ruins",
    "the market square",
    "the watchtower",
    "the salt marsh",
    "the ferry landing",
    "the orchard wall",
    "the broken bridge",
    "the inn",
)
_THINGS = (
    "a lantern",
    "a rope",
    "a map",
    "a torch",
    "a coil of wire",
    "a waterskin",
    "a small bell",
    "a cracked shield",
    "a bundle of letters",
    "a walking staff",
)
_SCENES = (
    "Rain drums on the roofs of {place} while the wind pulls at every loose shutter.",
    "A cart rolls past {place}, its driver humming a tune nobody else seems to know.",
    "Smoke rises from {place}, thin and grey against the afternoon sky.",
    "The road to {place} is quiet, and the mud still holds the prints of many boots.",
    "Somewhere near {place} a dog barks twice and then falls silent.",
    "Lamps are lit along {place} as the evening closes in around the party.",
    "A patrol of tired guards walks by {place} and nods without a word.",
    "Crows gather on the fence near {place}, watching the travellers closely.",
)
_ACTIONS = (
    "{who} checks {thing} and looks along the path toward {place}.",
    "{who} asks a passing merchant about the road to {place}.",
    "{who} shares {thing} with the others and keeps watch for a while.",
    "{who} walks ahead to {place} and waves for the others to follow.",
    "{who} kneels to study the ground and mutters about the weather.",
    "{who} counts the coins left in the purse and frowns at the total.",
    "{who} hums an old marching song to keep everyone's spirits up.",
    "{who} ties {thing} to the pack and tests the straps twice.",
)
_FILLER_WHISPERS = (
    "Is anyone following us since {place}?",
    "Do I recognise anyone at {place}?",
    "Can I rest a little before we reach {place}?",
)
_THOUGHTS = (
    "The road is long and I am tired of the rain.",
    "I wonder whether the others trust me as much as they say.",
    "Every town looks the same after a while.",
)


class _Words:
    """Invented words, unique and never a substring of one another."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.used: list[str] = []

    def new(self) -> str:
        while True:
            word = "".join(self.rng.sample(_SYLLABLES, 2))
            if all(word not in other and other not in word for other in self.used):
                self.used.append(word)
                return word


def _cap(word: str) -> str:
    return word[:1].upper() + word[1:]


def generate_campaign(*, rounds: int = 200, players: int = 4, seed: int = 1) -> dict[str, Any]:
    if rounds < 20:
        raise ValueError("rounds: a generated campaign has at least 20 rounds.")
    if not 1 <= players <= len(PLAYER_NAMES):
        raise ValueError(f"players: between 1 and {len(PLAYER_NAMES)}.")
    rng = random.Random(seed)
    words = _Words(rng)
    cast = list(PLAYER_NAMES[:players])
    turns: list[dict[str, Any]] = []
    lore: list[dict[str, Any]] = []
    facts: list[dict[str, Any]] = []
    by_round: dict[int, list[dict[str, Any]]] = {}

    sources: list[tuple[dict[str, Any], dict[str, Any]]] = []  # (lore entry, its turn)

    def plant(round_: int, turn: dict[str, Any]) -> dict[str, Any]:
        by_round.setdefault(round_, []).append(turn)
        return turn

    asked: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []  # (question, its turns)

    def ask(question, answer, evidence, category, at, *, role=None) -> None:
        item = {"question": question, "answer": answer, "evidence": [], "category": category}
        if role is not None:
            item["role"] = role
        item["asked_at_round"] = at
        asked.append((item, evidence))

    def fact(fid, round_, audience, answer, question) -> None:
        facts.append(
            {
                "id": fid,
                "round": round_,
                "audience": audience,
                "answer": answer,
                "question": question,
            }
        )

    # Coined terms: introduced early with a definition, asked about late.
    early_end = max(3, rounds // 7)
    for index in range(8):
        term = words.new() + ("-" + words.new() if index % 2 else "")
        trait = words.new()
        start = rng.randint(2, early_end)
        late = rng.randint(rounds - rounds // 5, rounds - 2)
        definition = f"The {term} is a relic of the {trait} folk, kept by the river wardens."
        intro = plant(
            start,
            turn_item(
                start,
                "DM",
                "narrative",
                f"An elder shows the party the {term}. {definition}",
                tags=[],
            ),
        )
        plant(
            late,
            turn_item(
                late,
                "DM",
                "narrative",
                f"A stranger asks whether anyone still remembers the {term}.",
                tags=[],
            ),
        )
        ask(
            f"What is the {term}, and whose relic is it?",
            f"a relic of the {trait} folk",
            [intro],
            "single",
            late,
        )
        lore.append(lore_entry(term, "artifact", definition, None, start, late))
        sources.append((lore[-1], intro))
        fact(f"term-{term}", start, None, [term, trait], f"What is the {term}, and whose is it?")

    # Lord Vane: introduced early, dies two thirds of the way in (lore invalidated).
    vane_intro = rng.randint(2, early_end)
    death = rounds * 2 // 3
    ford = _cap(words.new()) + " Ford"
    vane_turn = plant(
        vane_intro,
        turn_item(
            vane_intro,
            "DM",
            "narrative",
            "Lord Vane receives the party in his hall and promises them safe "
            "passage through Highmoor.",
            tags=["npc:Lord Vane"],
        ),
    )
    lore.append(
        lore_entry(
            "Lord Vane",
            "npc",
            "Lord Vane rules Highmoor and promised the party safe passage.",
            None,
            vane_intro,
            death,
            invalid_from=death,
        )
    )
    sources.append((lore[-1], vane_turn))
    death_turn = plant(
        death,
        turn_item(
            death,
            "DM",
            "narrative",
            f"Lord Vane falls at {ford}, struck down by an ambush from the reeds. "
            "The party must decide who will hold Highmoor now.",
            tags=["npc:Lord Vane:dead"],
            hinge=True,
        ),
    )
    lore.append(
        lore_entry(
            ford,
            "location",
            f"{ford} is the river crossing where Lord Vane was killed.",
            None,
            death,
            death,
            valid_from=death,
        )
    )
    sources.append((lore[-1], death_turn))
    ask(
        "Who promised the party safe passage through Highmoor, and where did he fall?",
        f"Lord Vane; {ford}",
        [vane_turn, death_turn],
        "multi",
        rounds,
    )
    fact("npc-lord-vane", vane_intro, None, ["Lord Vane"], "Who ruled Highmoor?")
    fact("hinge-vane-death", death, None, ["Lord Vane", ford], "Where did Lord Vane die?")

    # Public turning points.
    hinge_rounds = [r for r in range(12, rounds - 1, 12) if r != death]
    oaths: list[tuple[str, str, dict[str, Any]]] = []
    for r in hinge_rounds:
        oath = words.new()
        who = "DM" if r % 24 == 0 else cast[(r // 12) % len(cast)]
        kind = "narrative" if who == "DM" else "action"
        subject = "The party" if who == "DM" else who
        sworn = plant(
            r,
            turn_item(
                r,
                who,
                kind,
                f"{subject} swears the {_cap(oath)} oath at the crossroads. "
                "Nothing will be the same after this choice.",
                hinge=True,
            ),
        )
        oaths.append((subject, f"the {_cap(oath)} oath", sworn))
        ask(f"Which oath did {subject} swear?", oaths[-1][1], [sworn], "single", rounds)
        fact(f"hinge-{oath}", r, None, [_cap(oath)], f"What oath was sworn in round {r}?")

    for (_, first, a), (_, second, b) in zip(oaths[::2], oaths[1::2], strict=False):
        ask(
            f"Which oaths were sworn at the crossroads in rounds {a['round']} and {b['round']}?",
            f"{first}; {second}",
            [a, b],
            "multi",
            rounds,
        )

    # Secrets, whispers, GM notes, monologues.
    participants = [participant("DM", "dm", "The game master.", "", None, 0)]
    reveal_at = rounds * 3 // 5
    for index, name in enumerate(cast):
        goal = words.new()
        reveal = reveal_at if index == 0 else None
        secret = f"Recover the {goal} codex before anyone else does."
        participants.append(
            participant(
                name, "player", f"{name}, a traveller of the river road.", secret, reveal, index + 1
            )
        )
        fact(f"secret-{name}", 0, [name], [f"{goal} codex"], f"What is {name}'s secret goal?")
        if reveal is not None:
            fact(
                f"secret-{name}-revealed",
                reveal + 1,
                None,
                [f"{goal} codex"],
                f"What is {name}'s secret goal?",
            )
        hidden = []
        for k in range(2):
            r = rng.randint(5, rounds - 10)
            item = words.new()
            whispered = plant(
                r,
                turn_item(
                    r,
                    name,
                    "whisper",
                    f"I hid the {item} sigil under my cloak; tell no one else about it.",
                    visibility=sorted([name, "DM"]),
                    tags=[f"thread:{item} sigil"],
                ),
            )
            hidden.append((f"{item} sigil", whispered))
            fact(
                f"whisper-{name}-{k}",
                r,
                sorted([name, "DM"]),
                [f"{item} sigil"],
                f"What did {name} hide under the cloak?",
            )
        ask(
            f"What did {name} hide under the cloak?",
            "; ".join(item for item, _ in hidden),
            [turn for _, turn in hidden],
            "secret",
            rounds,
        )
        r = rng.randint(min(8, rounds // 3), rounds // 3)
        place = words.new()
        thought = plant(
            r,
            turn_item(
                r,
                name,
                "monologue",
                f"I will slip away to {_cap(place)} when the moon is dark. Nobody must guess it.",
                visibility=[name],
            ),
        )
        fact(f"monologue-{name}", r, [name], [_cap(place)], f"Where does {name} plan to go?")
        ask(
            f"Where does {name} plan to slip away to?",
            _cap(place),
            [thought],
            "secret",
            rounds,
            role=name,
        )
        for m in range(r + 25, rounds + 1, 25):
            plant(m, turn_item(m, name, "monologue", rng.choice(_THOUGHTS), visibility=[name]))
    for k in range(4):
        r = rng.randint(5, rounds - 10)
        spy = words.new()
        note = plant(
            r,
            turn_item(
                r,
                "DM",
                "gm_note",
                f"The innkeeper is a {spy} spy reporting to the harbour master.",
                visibility=["DM"],
                tags=[f"thread:{spy} spy"],
            ),
        )
        fact(f"gmnote-{k}", r, ["DM"], [f"{spy} spy"], "Who is the innkeeper really?")
        ask("Who is the innkeeper really?", f"a {spy} spy", [note], "secret", rounds)

    dates = _plant_dates(seed, rounds, words, plant)

    # Assemble: per round the DM narrates, players act, then planted turns.
    for r in range(1, rounds + 1):
        scene = " ".join(rng.choice(_SCENES).format(place=rng.choice(_PLACES)) for _ in range(5))
        turns.append(turn_item(r, "DM", "narrative", scene))
        for name in cast:
            action = " ".join(
                rng.choice(_ACTIONS).format(
                    who=name, thing=rng.choice(_THINGS), place=rng.choice(_PLACES)
                )
                for _ in range(3)
            )
            turns.append(turn_item(r, name, "action", action))
        if rng.random() < 0.3:
            name = rng.choice(cast)
            text = rng.choice(_FILLER_WHISPERS).format(place=rng.choice(_PLACES))
            turns.append(turn_item(r, name, "whisper", text, visibility=sorted([name, "DM"])))
        turns.extend(by_round.get(r, []))
    index_of = {id(t): i for i, t in enumerate(turns)}
    for entry, turn in sources:
        entry["source_turns"] = [index_of[id(turn)]]
    for item, evidence in [*asked, *dates]:
        item["evidence"] = [f"t{index_of[id(turn)] + 1}" for turn in evidence]
    turns = [{"key": f"t{i + 1}", **turn} for i, turn in enumerate(turns)]
    return {
        "format": FORMAT,
        "experiment": {
            "name": f"Generated campaign (seed {seed}, {rounds} rounds, {players} players)",
            "hook": "A company of travellers follows the river road through Highmoor.",
            "rules": "Narrate briefly; players act once per round.",
            "config": {},
            "status": "finished",
        },
        "participants": participants,
        "turns": turns,
        "lore": sorted(lore, key=lambda e: e["term"].lower()),
        "facts": facts,
        "questions": [item for item, _ in [*asked, *dates]],
    }


_MONTH_DAYS = 28
DATED_ROUNDS = 6


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _plant_dates(seed: int, rounds: int, words: _Words, plant) -> list[tuple[dict, list[dict]]]:
    """ "When" questions: rounds whose narration states the date as the party reaches a
    place (invented month and place names: the answer stands nowhere else)."""
    rng = random.Random(f"dates-{seed}")
    own = _Words(rng)
    own.used = words.used  # unique against every other invented word
    out = []
    for r in sorted(rng.sample(range(3, rounds - 2), DATED_ROUNDS)):
        date = f"the {_ordinal(rng.randint(1, _MONTH_DAYS))} of {_cap(own.new())}"
        place = _cap(own.new())
        turn = plant(
            r,
            turn_item(r, "DM", "narrative", f"It is {date} when the party first reaches {place}."),
        )
        item = {
            "question": f"On what day did the party first reach {place}?",
            "answer": date,
            "evidence": [],
            "category": "when",
            "asked_at_round": rounds,
        }
        out.append((item, [turn]))
    return out
