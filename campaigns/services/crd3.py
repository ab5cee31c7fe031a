"""Turn a CRD3 actual-play file into Babel's transcript format (SPEC §8), for measurement.

CRD3 (Critical Role Dungeons & Dragons Dataset) stores an episode either as ``{"TURNS":
[...]}`` (its cleaned data) or as a list of overlapping chunks ``[{"TURNS": [...]}, ...]``
(its aligned data). A turn is ``{"NAMES": [speaker, ...], "UTTERANCES": [line, ...],
"NUMBER": n}``; chunks overlap, so turns are deduplicated by NUMBER.

Mapping: the DM's speaker name (``MATT`` by default) becomes the role ``DM``; every other
speaker becomes a player role of the same name in title case (``LAURA`` → ``Laura``);
a turn with several names belongs to the first (``ALL`` stays a role of its own, which
the hydrator treats as the table, not a character). Every turn is public. A new round
starts at the first DM turn after ``turns_per_round`` turns. Nothing here touches the
database: the result goes through the ordinary import, which validates it.
"""

from __future__ import annotations

from typing import Any

from campaigns.services.converters import finished_transcript, offline_participant, public_turn

DEFAULT_DM_NAME = "MATT"


class CRD3Error(ValueError):
    """The input is not CRD3-shaped; the message names the element."""


def _turn_items(data: Any) -> list[dict]:
    if isinstance(data, dict) and isinstance(data.get("TURNS"), list):
        return list(data["TURNS"])
    if isinstance(data, list):
        items: list[dict] = []
        for index, chunk in enumerate(data):
            if not isinstance(chunk, dict) or not isinstance(chunk.get("TURNS"), list):
                raise CRD3Error(f"[{index}].TURNS: a chunk needs a TURNS list.")
            items.extend(chunk["TURNS"])
        return items
    raise CRD3Error("TURNS: expected {'TURNS': [...]} or a list of chunks with TURNS.")


def _role(name: str, dm_name: str) -> str:
    name = " ".join(name.split())
    if name.upper() == dm_name.upper():
        return "DM"
    return name.title() if name.isupper() else name


def crd3_turns(data: Any) -> list[tuple[int, str, str]]:
    """(number, first speaker, text) per distinct turn, in NUMBER order."""
    seen: dict[int, tuple[int, str, str]] = {}
    for index, item in enumerate(_turn_items(data)):
        if not isinstance(item, dict):
            raise CRD3Error(f"TURNS[{index}]: a turn is an object.")
        number, names, lines = item.get("NUMBER"), item.get("NAMES"), item.get("UTTERANCES")
        if not isinstance(number, int) or isinstance(number, bool):
            raise CRD3Error(f"TURNS[{index}].NUMBER: expected an integer.")
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            raise CRD3Error(f"TURNS[{index}].NAMES: expected a non-empty list of names.")
        if not isinstance(lines, list) or not all(isinstance(line, str) for line in lines):
            raise CRD3Error(f"TURNS[{index}].UTTERANCES: expected a list of strings.")
        text = " ".join(" ".join(lines).split())
        if text and number not in seen:
            seen[number] = (number, names[0].strip(), text)
    return [seen[number] for number in sorted(seen)]


def crd3_to_transcript(
    data: Any,
    *,
    name: str = "CRD3 episode",
    dm_name: str = DEFAULT_DM_NAME,
    turns_per_round: int = 20,
) -> dict[str, Any]:
    """A babel-transcript/1 dict for the CRD3 ``data`` (all turns public)."""
    if turns_per_round < 1:
        raise CRD3Error("turns_per_round: must be at least 1.")
    rows = crd3_turns(data)
    if not rows:
        raise CRD3Error("TURNS: no turn has any text.")
    roles: list[str] = []
    for _, speaker, _ in rows:
        role = _role(speaker, dm_name)
        if role != "DM" and role not in roles:
            roles.append(role)
    participants = [offline_participant("DM", "dm", 0)] + [
        offline_participant(role, "player", order) for order, role in enumerate(roles, start=1)
    ]
    turns = []
    round_, in_round = 1, 0
    for _, speaker, text in rows:
        role = _role(speaker, dm_name)
        if role == "DM" and in_round >= turns_per_round:
            round_, in_round = round_ + 1, 0
        in_round += 1
        turns.append(public_turn(round_, role, "narrative" if role == "DM" else "action", text))
    return finished_transcript(name, participants, turns)
