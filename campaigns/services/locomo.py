"""Turn a LoCoMo conversation into Babel's transcript format (SPEC §8), for measuring memory.

LoCoMo (snap-research/LoCoMo, ``data/locomo10.json``) is a list of long two-person
conversations: ``conversation`` holds ``speaker_a``, ``speaker_b`` and, per session N,
``session_N_date_time`` and ``session_N: [{speaker, dia_id, text[, blip_caption]}]``;
``qa`` holds questions whose ``evidence`` names the dialog ids (``"D3:5"``) that answer them.

Mapping: one round per session (round = session number). The DM narrates one public
turn at the start of each round, the session's date and time as given (key ``S<N>``), so
a "when" question has a date to find; every dialog line is a public ``action`` turn of
its speaker, keyed by its ``dia_id``; a shared photo adds its caption. Questions keep
the evidence ids that exist (a question left with none, such as an adversarial one, is
dropped) and are asked at the last round. Nothing here touches the database.
"""

from __future__ import annotations

import re
from typing import Any

from campaigns.services.converters import finished_transcript, offline_participant, public_turn

DM_ROLE = "DM"
# LoCoMo's category numbers (its README and paper: multi-hop, temporal reasoning,
# open-domain knowledge, single-hop, adversarial); the data agrees — every 2 is a "when".
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
QUESTION_FIELDS = ("question", "answer", "category")
SESSION_KEY = re.compile(r"session_(\d+)")


class LoCoMoError(ValueError):
    """The input is not LoCoMo-shaped; the message names the element."""


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise LoCoMoError(f"{where}: expected a non-empty string.")
    return value


def locomo_conversation(data: Any, number: int) -> dict:
    """The ``number``-th (1-based) conversation of a LoCoMo file."""
    if not isinstance(data, list) or not data:
        raise LoCoMoError("[]: expected a non-empty list of conversations.")
    if not 1 <= number <= len(data):
        raise LoCoMoError(f"[{number}]: no such conversation (the file has {len(data)}).")
    sample = data[number - 1]
    if not isinstance(sample, dict) or not isinstance(sample.get("conversation"), dict):
        raise LoCoMoError(f"[{number}].conversation: expected an object.")
    return sample


def _sessions(conversation: dict) -> list[tuple[int, str, list]]:
    """(number, date and time, dialog lines) per session, in session order."""
    sessions = []
    for key, lines in conversation.items():
        match = SESSION_KEY.fullmatch(key)
        if not match:
            continue
        if not isinstance(lines, list) or not lines:
            raise LoCoMoError(f"conversation.{key}: expected a non-empty list of lines.")
        when = _text(conversation.get(f"{key}_date_time"), f"conversation.{key}_date_time")
        sessions.append((int(match.group(1)), when, lines))
    if not sessions:
        raise LoCoMoError("conversation: no session_N list.")
    return sorted(sessions, key=lambda session: session[0])


def _line_turn(line: Any, round_: int, speakers: tuple[str, str], where: str) -> dict:
    if not isinstance(line, dict):
        raise LoCoMoError(f"{where}: a line is an object.")
    speaker = _text(line.get("speaker"), f"{where}.speaker")
    if speaker not in speakers:
        raise LoCoMoError(f"{where}.speaker: {speaker!r} is neither speaker_a nor speaker_b.")
    content = _text(line.get("text"), f"{where}.text")
    caption = line.get("blip_caption")
    if isinstance(caption, str) and caption.strip():
        content = f"{content} [shares a photo: {caption.strip()}]"
    turn = public_turn(round_, speaker, "action", content)
    turn["key"] = _text(line.get("dia_id"), f"{where}.dia_id")
    return turn


def locomo_turns(conversation: dict) -> list[dict]:
    """Every session as a round: the DM's date line, then the dialog, keyed by dia_id."""
    speakers = tuple(
        _text(conversation.get(field), f"conversation.{field}")
        for field in ("speaker_a", "speaker_b")
    )
    turns: list[dict] = []
    for number, when, lines in _sessions(conversation):
        date_turn = public_turn(number, DM_ROLE, "narrative", f"Session {number} — {when}")
        date_turn["key"] = f"S{number}"
        turns.append(date_turn)
        for index, line in enumerate(lines):
            where = f"conversation.session_{number}[{index}]"
            turns.append(_line_turn(line, number, speakers, where))
    seen: set[str] = set()
    for turn in turns:
        if turn["key"] in seen:
            raise LoCoMoError(f"dia_id: {turn['key']!r} appears twice.")
        seen.add(turn["key"])
    return turns


def locomo_qa_questions(qa: Any, keys: set[str], asked_at_round: int) -> list[dict]:
    """LoCoMo's qa as transcript questions, keeping only evidence that names a turn."""
    if not isinstance(qa, list):
        raise LoCoMoError("qa: expected a list.")
    questions = []
    for index, item in enumerate(qa):
        if not isinstance(item, dict):
            raise LoCoMoError(f"qa[{index}]: a question is an object.")
        question = _text(item.get("question"), f"qa[{index}].question")
        category = CATEGORIES.get(item.get("category"))
        if category is None:
            raise LoCoMoError(f"qa[{index}].category: expected one of {sorted(CATEGORIES)}.")
        evidence = item.get("evidence", [])
        if not isinstance(evidence, list):
            raise LoCoMoError(f"qa[{index}].evidence: expected a list of dialog ids.")
        # A few entries hold several ids in one string ("D9:1 D4:4 D4:6", conversation 9).
        named = (part for key in evidence if isinstance(key, str) for part in key.split())
        kept = list(dict.fromkeys(key for key in named if key in keys))
        if "answer" not in item or not kept:
            continue
        questions.append(
            {
                "question": question,
                "answer": str(item["answer"]),
                "evidence": kept,
                "category": category,
                "asked_at_round": asked_at_round,
            }
        )
    return questions


def checked_questions(
    questions: Any, keys: set[str], roles: set[str], last_round: int
) -> list[dict]:
    """Hand-written questions, every evidence key a turn of this transcript.

    ``asked_at_round`` defaults to the last round; ``role`` (whose pack is asked) is kept
    when given.
    """
    if not isinstance(questions, list) or not questions:
        raise LoCoMoError("questions: expected a non-empty list.")
    checked = []
    for index, item in enumerate(questions):
        where = f"questions[{index}]"
        if not isinstance(item, dict):
            raise LoCoMoError(f"{where}: a question is an object.")
        question = {field: _text(item.get(field), f"{where}.{field}") for field in QUESTION_FIELDS}
        evidence = item.get("evidence")
        if not isinstance(evidence, list) or not evidence:
            raise LoCoMoError(f"{where}.evidence: expected a non-empty list of turn keys.")
        unknown = [key for key in evidence if key not in keys]
        if unknown:
            raise LoCoMoError(f"{where}.evidence: no turn has the key {unknown[0]!r}.")
        asked_at = item.get("asked_at_round", last_round)
        if not isinstance(asked_at, int) or isinstance(asked_at, bool) or asked_at < 1:
            raise LoCoMoError(f"{where}.asked_at_round: expected a round number.")
        question.update(evidence=list(evidence), asked_at_round=asked_at)
        if "role" in item:
            if item["role"] not in roles:
                raise LoCoMoError(f"{where}.role: {item['role']!r} is not a role here.")
            question["role"] = item["role"]
        checked.append(question)
    return checked


def locomo_to_transcript(
    sample: dict, *, name: str | None = None, questions: Any = None
) -> dict[str, Any]:
    """A babel-transcript/1 dict for one LoCoMo conversation (all turns public).

    ``questions`` (hand-written, keyed by dia_id) replace the conversation's own qa.
    """
    conversation = sample["conversation"]
    turns = locomo_turns(conversation)
    speakers = [conversation["speaker_a"], conversation["speaker_b"]]
    participants = [offline_participant(DM_ROLE, "dm", 0)] + [
        offline_participant(role, "player", order) for order, role in enumerate(speakers, 1)
    ]
    keys = {turn["key"] for turn in turns}
    last_round = turns[-1]["round"]
    if questions is None:
        asked = locomo_qa_questions(sample.get("qa", []), keys, last_round)
    else:
        asked = checked_questions(questions, keys, {DM_ROLE, *speakers}, last_round)
    title = name or f"LoCoMo {sample.get('sample_id', 'conversation')}"
    return finished_transcript(title, participants, turns, questions=asked)
