"""An agent-played campaign, written for these tests: a DM model and three player models.

Player models fall into stock lines: Brannoc orders the lentil stew every evening and calls
it pure habit, Ilse calls everyone "old friend" and wants steady hands, Garrick says mark
my words, rubs his cowrie shell and wants a warm hearth. They rephrase the lines a little
each time, the way models do, and now and then repeat one almost word for word. None of
it is lore. The DM's narration names places, a group, an order and people once each
(`NAMED_ONCE`); those are lore. The story's real coinages (`COINED`) recur in narration.
"""

from __future__ import annotations

PLAYERS = ("Brannoc", "Ilse", "Garrick")

# (round, speaker, text); the DM's turns are narration, the players' are actions.
TURNS: tuple[tuple[int, str, str], ...] = (
    (
        1,
        "DM",
        "Rain follows you through the gates of the city of Vell Amar. The watch waves you "
        "past the Thornwick Gate without a second look, and the smell of wet stone and "
        "woodsmoke hangs over everything.",
    ),
    (
        1,
        "Brannoc",
        "Brannoc shakes the rain from his beard and heads straight for the nearest inn. "
        "He orders a bowl of lentil stew and a mug of whatever is cheapest.",
    ),
    (
        1,
        "Ilse",
        'Ilse claps Brannoc on the shoulder. "Food first, then trouble, old friend. '
        'Steady hands make for a steady night."',
    ),
    (
        1,
        "Garrick",
        'Garrick rubs the cowrie shell at his throat for luck. "Mark my words, this city '
        "will try to rob us before dawn. A warm hearth, a feather pillow and a locked door, "
        'that is all I ask."',
    ),
    (
        2,
        "DM",
        "Morning comes grey. In the square below the inn, the Greycloaks pass in a silent "
        "double file, their hoods drawn low, and the crowd parts to let them through. The "
        "innkeeper, a broad woman with flour on her sleeves, sets out bread and warns you "
        "to keep clear of them.",
    ),
    (
        2,
        "Brannoc",
        'Brannoc asks the innkeeper for lentil stew, even at breakfast. "It is pure habit, '
        'nothing more," he says with a shrug when Ilse stares.',
    ),
    (
        2,
        "Ilse",
        "Ilse leans on the window sill and watches the robed figures file away. "
        '"Keep steady hands, old friend. We do not pick fights with men who walk like that."',
    ),
    (
        2,
        "Garrick",
        'Garrick rubs the cowrie shell at his throat for luck. "Mark my words, those '
        "hoods are trouble. I would rather sit by a warm hearth with a feather pillow than "
        'follow them."',
    ),
    (
        3,
        "DM",
        "At the Tallow Market an old monk named Brother Anselm beckons you into the shade "
        "of his stall. He sells candles and rumours in equal measure, and he has heard "
        "that Lady Corisande is paying well for discreet work.",
    ),
    (
        3,
        "Brannoc",
        "Brannoc buys a candle to be polite and asks the monk where a dwarf can get a "
        "decent lentil stew around here. Call it pure habit, he explains.",
    ),
    (
        3,
        "Ilse",
        'Ilse bows to Brother Anselm. "Old friend, or so I hope. Steady hands, and tell '
        'us what the lady wants."',
    ),
    (
        3,
        "Garrick",
        'Garrick rubs the cowrie shell at his throat for luck. "Mark my words, a lady '
        'who pays well pays for blood. Still, a warm hearth and a feather pillow cost coin."',
    ),
    (
        4,
        "DM",
        "Lady Corisande receives you in a cold parlour above the river. Her steward, "
        "Captain Harl Dunmore, stands by the door with one hand on his sword. She wants a "
        "ledger recovered from a counting house in the Sunken Quarter before the week is "
        "out.",
    ),
    (
        4,
        "Brannoc",
        "Brannoc listens and nods along, wondering whether her cook makes lentil stew. "
        "The lentil stew in this city smells of cumin, he decides; thinking of food in a "
        "room like this is pure habit.",
    ),
    (
        4,
        "Ilse",
        'Ilse meets the captain\'s eyes. "We keep steady hands, old friend," she murmurs '
        'to Garrick. "We take the job, but we set the price."',
    ),
    (
        4,
        "Garrick",
        'Garrick rubs the cowrie shell at his throat for luck. "Mark my words, my lady, '
        'we will find your ledger. Just see that there is a feather pillow waiting."',
    ),
    (
        5,
        "DM",
        "The counting house squats at the end of a flooded lane, its door sealed with a "
        "strip of tallow-wax. Inside, someone has left a lamp burning.",
    ),
    (
        5,
        "Brannoc",
        "Brannoc tests the tallow-wax seal with his thumb. Later, he promises himself, a "
        "hot bowl of lentil stew. Pure habit keeps a dwarf calm.",
    ),
    (
        5,
        "Ilse",
        'Ilse draws her knife and slips inside first. "Steady hands, old friend. Watch the lamp."',
    ),
    (
        5,
        "Garrick",
        'Garrick rubs the cowrie shell at his throat, for luck, as always. "Mark my words, '
        'that lamp is bait. I miss my feather pillow already."',
    ),
    (
        6,
        "DM",
        "Behind the counting desk the tallow-wax seals have been cut and the ledger is "
        "gone. A grey thread is caught on the shutter: the Greycloaks were here first.",
    ),
    (
        6,
        "Brannoc",
        "Brannoc grumbles that he should have eaten more lentil stew before a night like "
        "this. Grumbling when the loot is gone is pure habit for a dwarf.",
    ),
    (
        6,
        "Ilse",
        'Ilse picks the grey thread off the shutter. "Steady hands, old friend. They '
        'cannot have gone far."',
    ),
    (
        6,
        "Garrick",
        'Garrick rubs the cowrie shell at his throat for luck. "Mark my words, we will '
        'be blamed for this. So much for a feather pillow tonight."',
    ),
)

# Said once each, in narration: what the World Bible must propose.
NAMED_ONCE = (
    "vell amar",  # the city of X
    "thornwick gate",  # passes the X Gate
    "greycloak",  # the Xs pass (said twice in all, but introduced in round 2)
    "tallow market",  # at the X
    "brother anselm",  # an old monk named Brother Z
    "lady corisande",  # a titled NPC
    "harl dunmore",  # Captain Harl Dunmore
    "sunken quarter",  # in the X
)
# A real coinage of the story, repeated in narration and by a player.
COINED = ("tallow wax",)
# What the players keep saying: never lore.
STOCK = (
    "lentil stew",
    "pure habit",
    "old friend",
    "steady hand",
    "feather pillow",
    "cowrie shell",
    "warm hearth",
    "mark my word",
)
