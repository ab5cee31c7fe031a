"""Table talk: what people at a real table say that is not lore (SPEC §5.5, issue 10).

A human actual-play transcript is full of words that look like names to a surface rule:
contractions and clause starts ("How'd", "I'm Grog", "What's that"), interjections and
elongations ("Meh", "Nnnn", "Helloooo"), rules words ("Acrobatics", "Bluffing"), days and
greetings ("Thursdays", "Happy New Year"), real-world brands said out of character, and
whole out-of-character asides ("(( brb ))", "[rolls]", "OOC: pizza's here"). This module
holds those lists and the out-of-character stripper; `extraction` consults it.
"""

from __future__ import annotations

import re

from context_engine.memory.vocabulary import STOPWORDS


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Speakers whose lines are the table, not a character.
OOC_SPEAKERS = _words("TABLE ALL OOC EVERYONE PLAYERS CREW AUDIENCE CHAT GROUP")

INTERJECTIONS = _words(
    """
    ah aha ahh ahem argh aw aww bah blah boo bravo brr dang darn eh er erm gee gosh ha haha
    hah heh hey hi hm hmm hmmm huh hurray hooray lol lmao meh mhm mm mmm nah nope nu oh ok
    okay okey oof ooh oops ouch ow phew pfft psst shh sheesh ugh uh uhh um umm whoa whoops
    wow yay yeah yep yes yup yikes yo hello hiya howdy bye goodbye cheers thanks thx welp
    woah woo woohoo yikes alright aight sure nope oi agh gah ach pssh tsk
    """
)

# Game-rules words (D&D and friends): skills, abilities, conditions, dice jargon.
RULES_WORDS = _words(
    """
    acrobatics athletics arcana deception history insight intimidation investigation
    medicine nature perception performance persuasion religion stealth survival
    strength dexterity constitution intelligence wisdom charisma initiative advantage
    disadvantage inspiration bluff bluffing diplomacy concentration cantrip cantrips
    crit crits nat natural reroll saving save throw throws spellcasting ritual reaction
    reactions bonus action actions attack attacks damage hp xp ac dc dm gm pc pcs npc npcs
    proficiency expertise sneak smite rage ki sorcery darkvision multiclass feat feats
    grappled prone stunned restrained frightened charmed poisoned paralyzed petrified
    incapacitated unconscious exhaustion invisible blinded deafened round rounds turn
    """
)

DAYS_AND_SEASONS = _words(
    """
    monday tuesday wednesday thursday friday saturday sunday mondays tuesdays wednesdays
    thursdays fridays saturdays sundays january february march april may june july august
    september october november december christmas xmas easter halloween thanksgiving
    valentine valentines hanukkah diwali ramadan eid weekend weekends tonight today
    tomorrow yesterday
    """
)

GREETINGS = frozenset(
    {
        "happy new year",
        "new year",
        "new years",
        "merry christmas",
        "happy birthday",
        "happy holidays",
        "happy halloween",
        "happy thanksgiving",
        "good morning",
        "good evening",
        "good night",
        "good afternoon",
        "good game",
        "thank you",
        "oh my god",
        "my god",
        "oh god",
        "jesus christ",
    }
)

# Real-world brands and services people mention at a table (out of character).
BRANDS = frozenset(
    {
        "discord",
        "zoom",
        "skype",
        "twitch",
        "youtube",
        "twitter",
        "facebook",
        "instagram",
        "tiktok",
        "reddit",
        "patreon",
        "netflix",
        "amazon",
        "google",
        "iphone",
        "android",
        "xbox",
        "playstation",
        "nintendo",
        "roll20",
        "dndbeyond",
        "d&d beyond",
        "dnd beyond",
        "wizards of the coast",
        "critical role",
        "doritos",
        "cheetos",
        "pringles",
        "skittles",
        "starbucks",
        "mcdonalds",
        "mcdonald",
        "taco bell",
        "pizza hut",
        "dominos",
        "domino",
        "coke",
        "pepsi",
        "mountain dew",
        "red bull",
        "monster energy",
        "uber",
        "uber eats",
        "doordash",
        "grubhub",
        "spotify",
        "ikea",
        "walmart",
        "costco",
        "lego",
        "disney",
        "pixar",
        "star wars",
        "star trek",
        "lord of the rings",
        "harry potter",
        "game of thrones",
        "pokemon",
        "minecraft",
        "fortnite",
        "chatgpt",
        "openai",
        # Game systems and the shows around them, named when the table talks shop.
        "pathfinder",
        "starfinder",
        "dungeons & dragons",
        "dungeons and dragons",
        "geek & sundry",
        "vampire the masquerade",
        "call of cthulhu",
        "bafta",
        "emmy",
        "grammy",
    }
)

# Talk about the show, the stream or the people playing: a turn with one of these is
# out of character as a whole (the cast's own names sit beside them, e.g. "My name is
# <player>. I'm a voice actor.").
META_TALK = re.compile(
    r"\b(?:voice actors?|chat ?room|the chat|livestream\w*|on the stream|our stream|"
    r"this episode|next episode|last episode|episodes|donations?|sponsor\w*|"
    r"subscrib\w+|patreon|twitch|youtube|podcast|d&d|dungeons (?:&|and) dragons|"
    r"(?:5th|fifth) edition|house[- ]rul\w+|character sheets?|the cameras?|cameraman|"
    r"the mic|microphone|audio|tech problems?|our viewers|the viewers)\b",
    re.IGNORECASE,
)

_ELONGATED = re.compile(r"([A-Za-z])\1\1")  # Nnnn, Helloooo, Ahhh, Sooo
_CONTRACTION = re.compile(r"['’](?:d|m|re|ll|ve|t|s)$", re.IGNORECASE)
_OOC_BRACKETS = re.compile(r"\(\(.*?\)\)|\[.*?\]|\{.*?\}|\(\s*ooc\b.*?\)", re.IGNORECASE | re.S)
_OOC_LINE = re.compile(r"^\s*(?:ooc|//|\(ooc|table talk)\b.*$", re.IGNORECASE | re.M)
_OOC_INLINE = re.compile(r"\booc\s*[:\-—].*?(?:$|\n)", re.IGNORECASE)


def strip_out_of_character(text: str) -> str:
    """``text`` without its out-of-character parts: ((…)), […], {…}, (OOC …), OOC lines."""
    text = _OOC_BRACKETS.sub(" ", text or "")
    text = _OOC_LINE.sub(" ", text)
    return _OOC_INLINE.sub("\n", text)


def is_meta_talk(text: str) -> bool:
    """Does ``text`` talk about the show, the stream or the players (out of character)?"""
    return META_TALK.search(text or "") is not None


def is_ooc_speaker(speaker: str) -> bool:
    return (speaker or "").strip().upper() in OOC_SPEAKERS


def is_contraction(word: str) -> bool:
    """A clause fragment such as "How'd", "I'm", "What's", "Don't" (not "Vane's").

    A trailing 's is a possessive only on a word that is not itself a function word.
    """
    if not _CONTRACTION.search(word):
        return False
    base = re.split(r"['’]", word)[0].lower()
    if word.lower().endswith(("'s", "’s")):
        return base in STOPWORDS or base in INTERJECTIONS or base in {"let", "that", "it"}
    return True


def is_table_word(word: str) -> bool:
    """A word said at the table that is never lore on its own."""
    lower = word.lower().replace("’", "'")
    return (
        bool(_ELONGATED.search(word))
        or lower in INTERJECTIONS
        or lower in RULES_WORDS
        or lower in DAYS_AND_SEASONS
        or lower in BRANDS
        or is_contraction(word)
    )


def is_table_phrase(term: str) -> bool:
    """A whole candidate that is a greeting, a brand, or made only of table words."""
    lower = " ".join(term.lower().replace("’", "'").split())
    if lower in GREETINGS or lower in BRANDS:
        return True
    words = [w for w in re.split(r"[\s\-_]+", term) if w]
    return bool(words) and all(is_table_word(w) or w.lower() in STOPWORDS for w in words)
