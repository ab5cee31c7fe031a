"""The demo campaign, written for Babel: "The Drowned Archive".

Thirteen rounds, a DM and three players. It exercises everything the context engine
cares about: whispers (player ↔ DM), GM notes, monologues, a secret goal, hinges, tags,
and coined terms — proper names (Maelis Orrow, the Geometers), CamelCase (SaltMarch),
ALL_CAPS (KESTREL) and lowercase coinages (tide-script, lantern-moss, brinewick oil).
`manage.py seed_demo` loads it through the transcript importer.
"""

from __future__ import annotations

import copy

DEMO_NAME = "The Drowned Archive (demo)"

HOOK = (
    "Every spring tide the city of Lowmere drains its flooded archive for six hours. "
    "This year the water left behind a door that was not there before, sealed with "
    "tide-script that only appears when the sea pulls back. The Archivist has hired "
    "three strangers to open it before the Geometers do."
)

RULES = (
    "Rounds: the DM narrates, each player acts once, then the DM answers whispers. "
    "Checks: describe intent; the DM sets a difficulty (easy, hard, desperate) and narrates "
    "the result. Whispers reach only the DM. The low tide lasts six rounds of play."
)

PARTICIPANTS = [
    {
        "role": "DM",
        "kind": "dm",
        "model": "offline",
        "bio": "The narrator of Lowmere, a city on stilts above a drowned archive.",
        "identity": "You are the Dungeon Master. Narrate vividly, keep secrets, end with a choice.",
        "secret": "",
        "reveal_round": None,
        "order": 0,
    },
    {
        "role": "Thorin",
        "kind": "player",
        "model": "offline",
        "bio": "Thorin Ashvault, a dwarf salvage-diver with a brass lung and a debt to the harbour.",
        "identity": "You play Thorin: blunt, practical, protective of the others.",
        "secret": "",
        "reveal_round": None,
        "order": 1,
    },
    {
        "role": "Cassia",
        "kind": "player",
        "model": "offline",
        "bio": "Cassia Venn, a soft-spoken scholar of dead scripts from the upper city.",
        "identity": "You play Cassia: curious, careful, charming when it helps.",
        "secret": (
            "You are a sworn agent of the Quiet Ledger. Steal the Tide Codex for them "
            "and let no one learn who paid you."
        ),
        "reveal_round": None,
        "order": 2,
    },
    {
        "role": "Wren",
        "kind": "player",
        "model": "offline",
        "bio": "Wren Tallow, a halfling lamplighter who knows every catwalk in SaltMarch.",
        "identity": "You play Wren: quick, funny, terrified of deep water.",
        "secret": "",
        "reveal_round": None,
        "order": 3,
    },
]

_DM_ONLY = ["DM"]


def _whisper(player: str) -> list[str]:
    return sorted([player, "DM"])


def _t(round_, speaker, kind, content, visibility=None, tags=(), hinge=False):
    return {
        "round": round_,
        "speaker": speaker,
        "kind": kind,
        "content": content,
        "visibility": visibility,
        "tags": list(tags),
        "hinge": hinge,
    }


TURNS = [
    # Round 0: setup
    _t(
        0,
        "DM",
        "system",
        "Session zero: Lowmere, spring tide. Three hired strangers meet at the Archive stair.",
    ),
    _t(
        0,
        "DM",
        "gm_note",
        "Truth: the door is a Geometer trap. The Tide Codex is real but bound to whoever reads the tide-script aloud.",
        _DM_ONLY,
        ["thread:codex-binding"],
    ),
    # Round 1
    _t(
        1,
        "DM",
        "narrative",
        "The sea withdraws with a long sigh. Archivist Maelis Orrow leads you down slick stairs lit by lantern-moss, which glows brighter wherever salt has dried. At the bottom stands the new door, its surface crawling with tide-script.",
        None,
        ["npc:Maelis Orrow", "thread:the-door"],
    ),
    _t(
        1,
        "DM",
        "choice",
        "Do you read the tide-script, search the flooded stacks, or question Maelis about who else knows?",
        None,
        ["thread:the-door"],
    ),
    _t(
        1,
        "Thorin",
        "action",
        "Thorin taps the door with his brass lung's valve and listens for hollow space behind it.",
    ),
    _t(
        1,
        "Cassia",
        "action",
        "Cassia copies the tide-script into her notebook before the light shifts.",
    ),
    _t(
        1,
        "Cassia",
        "monologue",
        "The script matches the Ledger's sketches. If I read it first, the Codex answers to me.",
        ["Cassia"],
    ),
    _t(
        1,
        "Wren",
        "action",
        "Wren climbs the drainage chain to look for other footprints in the silt.",
    ),
    # Round 2
    _t(
        2,
        "DM",
        "narrative",
        "Behind the door Thorin hears water moving in a hollow chamber. Wren finds boot prints with square hobnails: the mark of the Geometers, surveyors who claim the drowned city by measurement.",
        None,
        ["faction:Geometers", "thread:rivals"],
    ),
    _t(
        2,
        "DM",
        "intel",
        "Intel: the Geometers tithe to Captain Idris Vane of the harbour watch. His ship, the KESTREL, is moored beneath SaltMarch.",
        None,
        ["npc:Idris Vane", "faction:Geometers"],
    ),
    _t(
        2,
        "Wren",
        "action",
        "Wren pockets a lump of brinewick oil from a Geometer lamp left in the silt.",
        None,
        ["item:brinewick oil"],
        True,
    ),
    _t(
        2,
        "Thorin",
        "action",
        "Thorin wedges a void-chisel into the door seam, testing whether it will split.",
    ),
    _t(
        2,
        "Cassia",
        "whisper",
        "Cassia, to the DM: can I tell which words of the tide-script are a lock and which are a name?",
        _whisper("Cassia"),
    ),
    _t(
        2,
        "DM",
        "whisper",
        "DM, to Cassia: the last line is a name. Whoever speaks it binds the Codex. You are sure of it.",
        _whisper("Cassia"),
        ["thread:codex-binding"],
    ),
    # Round 3
    _t(
        3,
        "DM",
        "narrative",
        "The void-chisel bites and the door weeps seawater. Somewhere above, a bell tolls twice: the Hollow Bell, rung only when the tide turns early.",
        None,
        ["thread:early-tide"],
    ),
    _t(
        3,
        "DM",
        "choice",
        "Force the door now and risk the early tide, or retreat to SaltMarch and come back at the next ebb?",
        None,
        ["thread:early-tide"],
    ),
    _t(
        3, "Thorin", "action", "Thorin votes to force it: a debt collector does not wait for tides."
    ),
    _t(3, "Wren", "action", "Wren rubs brinewick oil on the hinges so they stop screaming."),
    _t(
        3,
        "Cassia",
        "action",
        "Cassia agrees to force it, and offers to read the script aloud to calm the water.",
    ),
    _t(
        3,
        "DM",
        "narrative",
        "The party forces the door. Decision made: they stay below as the tide turns.",
        None,
        ["thread:early-tide"],
        True,
    ),
    # Round 4
    _t(
        4,
        "DM",
        "narrative",
        "Inside, shelves of sealed jars hold salt-ghosts: the pressed voices of drowned archivists. In the centre, on a plinth of ember-glass, rests the Tide Codex.",
        None,
        ["thread:codex"],
    ),
    _t(
        4,
        "DM",
        "gm_note",
        "Maelis Orrow is not what she seems: she sold the door's location to Idris Vane for passage on the KESTREL.",
        _DM_ONLY,
        ["npc:Maelis Orrow", "thread:betrayal"],
    ),
    _t(
        4,
        "Thorin",
        "action",
        "Thorin checks the plinth for pressure plates before anyone touches it.",
    ),
    _t(
        4,
        "Wren",
        "whisper",
        "Wren, to the DM: I don't trust Maelis. Can I see if she's signalling anyone?",
        _whisper("Wren"),
    ),
    _t(
        4,
        "DM",
        "whisper",
        "DM, to Wren: she glances at the stair twice and taps her lantern three times. Someone is waiting above.",
        _whisper("Wren"),
        ["npc:Maelis Orrow", "thread:betrayal"],
    ),
    _t(
        4,
        "Wren",
        "monologue",
        "Three taps. A signal. I'll keep close to the chain in case we have to run.",
        ["Wren"],
    ),
    # Round 5
    _t(
        5,
        "DM",
        "narrative",
        "Boots on the stair. Captain Idris Vane descends with four Geometers carrying measuring rods tipped with iron.",
        None,
        ["npc:Idris Vane", "faction:Geometers", "thread:rivals"],
    ),
    _t(
        5,
        "DM",
        "choice",
        "Parley with Vane, fight on the slick floor, or grab the Codex and run for the drainage chain?",
        None,
        ["thread:rivals"],
    ),
    _t(
        5,
        "Cassia",
        "action",
        "Cassia steps between the groups and offers Vane a copy of the tide-script in exchange for safe passage.",
    ),
    _t(
        5,
        "Thorin",
        "action",
        "Thorin hefts the void-chisel and plants himself in front of the plinth.",
    ),
    _t(
        5,
        "Wren",
        "action",
        "Wren douses the Geometers' lamps with a flick of brinewick oil and a spark.",
    ),
    _t(
        5,
        "DM",
        "narrative",
        "Vane accepts the copy but keeps his rods raised. The Geometers now owe Cassia a favour, and they know it.",
        None,
        ["faction:Geometers", "npc:Idris Vane"],
        True,
    ),
    # Round 6
    _t(
        6,
        "DM",
        "narrative",
        "Water creeps over the floor: the early tide is coming. The salt-ghosts begin to whisper in unison, a low hum that makes the ember-glass ring.",
        None,
        ["thread:early-tide"],
    ),
    _t(
        6,
        "DM",
        "intel",
        "Intel: ashfern tonic, brewed by harbour divers, lets a body breathe salt water for an hour. Thorin carries two flasks.",
        None,
        ["item:ashfern tonic"],
    ),
    _t(
        6,
        "Thorin",
        "action",
        "Thorin hands Wren a flask of ashfern tonic and keeps one for himself.",
        None,
        ["item:ashfern tonic"],
    ),
    _t(
        6,
        "Cassia",
        "monologue",
        "If the water rises I can read the name while the others swim. No witnesses but the ghosts.",
        ["Cassia"],
    ),
    _t(
        6,
        "Wren",
        "action",
        "Wren drinks half the ashfern tonic, gagging, and ties herself to the drainage chain.",
    ),
    # Round 7
    _t(
        7,
        "DM",
        "narrative",
        "The tide pours through the door. In the flooded dark, the tide-script on the plinth blazes and the last line, the name, floats free of the stone.",
        None,
        ["thread:codex-binding"],
    ),
    _t(
        7,
        "DM",
        "choice",
        "Someone can speak the name now. Who reaches for it?",
        None,
        ["thread:codex-binding"],
    ),
    _t(
        7,
        "Cassia",
        "whisper",
        "Cassia, to the DM: I speak the name under the water, quietly, so only the Codex hears.",
        _whisper("Cassia"),
        ["thread:codex-binding"],
    ),
    _t(
        7,
        "DM",
        "whisper",
        "DM, to Cassia: the Codex binds to you. Its pages turn warm in your hands. Nobody saw.",
        _whisper("Cassia"),
        ["thread:codex-binding"],
        True,
    ),
    _t(
        7,
        "Thorin",
        "action",
        "Thorin drags Cassia and the Codex toward the chain, ashfern tonic burning in his chest.",
    ),
    _t(
        7,
        "Wren",
        "action",
        "Wren hauls on the chain, pulling the party up through the drain shaft.",
    ),
    # Round 8
    _t(
        8,
        "DM",
        "narrative",
        "You surface in SaltMarch among the stilt-houses. Maelis Orrow is gone. Idris Vane's KESTREL is casting off, and a Geometer signal lamp burns on its mast.",
        None,
        ["npc:Maelis Orrow", "npc:Idris Vane", "thread:betrayal"],
    ),
    _t(
        8,
        "DM",
        "gm_note",
        "Vane believes the Codex drowned. He will learn otherwise if anyone uses brinewick oil near the KESTREL: the Geometers mark their oil.",
        _DM_ONLY,
        ["thread:rivals"],
    ),
    _t(
        8,
        "Wren",
        "action",
        "Wren tells the others Maelis was signalling someone on the stair all along.",
        None,
        ["npc:Maelis Orrow", "thread:betrayal"],
        True,
    ),
    _t(8, "Thorin", "action", "Thorin swears to find Maelis and collect what she owes them."),
    _t(
        8,
        "Cassia",
        "action",
        "Cassia keeps the Codex wrapped in her coat and says it is only a waterlogged ledger.",
    ),
    # Round 9
    _t(
        9,
        "DM",
        "narrative",
        "At dawn a messenger in grey brings a sealed note to Cassia alone: a blank page with a single ink thumbprint, the sign of the Quiet Ledger.",
        None,
        ["faction:Quiet Ledger"],
    ),
    _t(
        9,
        "DM",
        "gm_note",
        "The Quiet Ledger wants the Codex delivered at the Hollow Bell at midnight. Failure means Cassia's cover is burned.",
        _DM_ONLY,
        ["faction:Quiet Ledger", "thread:delivery"],
    ),
    _t(
        9,
        "Cassia",
        "monologue",
        "Midnight at the Hollow Bell. Thorin will follow me if I go alone. I need Wren to distract him.",
        ["Cassia"],
    ),
    _t(
        9,
        "Thorin",
        "action",
        "Thorin notices Cassia pocket the note and asks who her friends in grey are.",
    ),
    _t(
        9,
        "Wren",
        "action",
        "Wren buys more lantern-moss from a SaltMarch stall to light the catwalks tonight.",
    ),
    # Round 10
    _t(
        10,
        "DM",
        "narrative",
        "The harbour is restless. Word spreads that the Geometers are surveying SaltMarch for demolition, plank by plank.",
        None,
        ["faction:Geometers", "thread:demolition"],
    ),
    _t(
        10,
        "DM",
        "choice",
        "Warn the stilt-houses, shadow the surveyors, or prepare for midnight?",
        None,
        ["thread:demolition"],
    ),
    _t(
        10,
        "Wren",
        "action",
        "Wren runs the catwalks warning every lamplighter she knows.",
        None,
        ["thread:demolition"],
    ),
    _t(
        10,
        "Thorin",
        "whisper",
        "Thorin, to the DM: I follow Cassia tonight, quiet as I can in a brass lung.",
        _whisper("Thorin"),
    ),
    _t(
        10,
        "DM",
        "whisper",
        "DM, to Thorin: you can shadow her, but the brass lung wheezes. A hard check when she reaches the Hollow Bell.",
        _whisper("Thorin"),
    ),
    _t(
        10,
        "Cassia",
        "action",
        "Cassia asks Wren to keep Thorin busy at the tavern tonight, with a smile.",
    ),
    # Round 11
    _t(
        11,
        "DM",
        "narrative",
        "Midnight. The Hollow Bell hangs over black water. A figure in grey waits under it, and behind Cassia, a brass lung wheezes in the dark.",
        None,
        ["thread:delivery"],
    ),
    _t(
        11,
        "Thorin",
        "action",
        "Thorin steps out of the shadows: 'Whoever you are, that book belongs to the archive.'",
    ),
    _t(
        11,
        "Cassia",
        "action",
        "Cassia freezes, then holds the Codex out toward the figure in grey.",
    ),
    _t(
        11,
        "DM",
        "narrative",
        "The Codex refuses to leave Cassia's hands: it is bound to her. The figure in grey steps back, furious. Decision made: the deal collapses.",
        None,
        ["faction:Quiet Ledger", "thread:codex-binding"],
        True,
    ),
    _t(
        11,
        "Wren",
        "action",
        "Wren arrives late with lantern-moss and sees Thorin and Cassia facing a stranger under the bell.",
    ),
    # Round 12
    _t(
        12,
        "DM",
        "narrative",
        "The stranger vanishes. Thorin and Cassia stand in the swaying light. The Codex's pages show a map: the KESTREL's course, and Maelis Orrow's name written in tide-script.",
        None,
        ["npc:Maelis Orrow", "npc:Idris Vane", "thread:betrayal"],
    ),
    _t(
        12,
        "DM",
        "choice",
        "Confront Cassia about the stranger, chase the KESTREL, or hide the Codex back in the archive?",
        None,
        ["thread:betrayal"],
    ),
    _t(12, "Thorin", "action", "Thorin asks Cassia, plainly, who she works for."),
    _t(
        12,
        "Cassia",
        "action",
        "Cassia tells a half-truth: a patron who funds her studies, nothing more.",
    ),
    _t(
        12,
        "Wren",
        "action",
        "Wren suggests they sail after the KESTREL at the next ebb and settle everything there.",
        None,
        ["thread:betrayal"],
        True,
    ),
    # Round 13
    _t(
        13,
        "DM",
        "narrative",
        "At the next ebb a borrowed skiff slides out of SaltMarch. Ahead, the KESTREL's mast lamp burns Geometer blue. Behind you, the Hollow Bell rings once.",
        None,
        ["npc:Idris Vane", "thread:rivals"],
    ),
    _t(
        13,
        "DM",
        "choice",
        "Board the KESTREL by night, hail it openly, or trail it to its harbour?",
        None,
        ["thread:rivals"],
    ),
]

LORE = [
    {
        "term": "tide-script",
        "category": "term",
        "definition": "Writing that appears on stone in Lowmere's archive only when the sea pulls back.",
        "audience": None,
        "status": "confirmed",
        "origin": "dm",
        "locked": True,
        "first_seen_round": 1,
        "last_seen_round": 12,
        "mention_count": 6,
        "valid_from_round": None,
        "invalid_from_round": None,
        "source_turns": [2],
    },
]


def transcript() -> dict:
    """The demo as a transcript (the import/export format); a fresh copy every call."""
    return copy.deepcopy(
        {
            "format": "babel-transcript/1",
            "experiment": {
                "name": DEMO_NAME,
                "hook": HOOK,
                "rules": RULES,
                "config": {"strategy": "layered", "memory_interval": 4},
                "status": "running",
            },
            "participants": PARTICIPANTS,
            "turns": TURNS,
            "lore": LORE,
        }
    )
