"""Canned model answers the stand-ins give, per request kind and behaviour.

Shared by the Gemini and OpenAI stand-ins so both fail in exactly the same ways. The
kind of answer is read from the request: a schema with ``hinge_index`` (or a prompt
naming the digest headings) wants a digest, a schema with ``definition`` wants a
definition, a schema with ``known`` and ``answer`` is the Arena's judge, any other
schema gets an object filled from it, plain text gets a sentence.

Three behaviours play a weak relay agent (issue 26): ``unlabelled`` answers prose with no
labelled block every time; ``unlabelled_repairable`` does too, except to the relay's repair
request (a prompt quoting its answer back), which it answers by labelling the quoted answer
``PUBLIC:``; ``echo_format`` answers with the answer format's lines from its prompt.

Two behaviours play a World Bible vetting model (a schema with ``terms``); any other
request under them gets the ``ok`` answer, so a whole /checkpoint can run under one:

- ``vet_lines`` answers every proposal line of the prompt with that line's own first
  quoted sentence (a faithful model);
- ``vet_blend`` answers every line with all the quoted sentences of the *whole prompt*
  that name the term's last word, in prompt order (a model that mixes in whatever else it
  was shown about the same thing).
"""

from __future__ import annotations

import json
import re

DIGEST_KEYS = ("hinge_index", "standing_reasons", "npc_memory_anchors", "open_threads")
DIGEST_HEADINGS = ("Hinge Index", "Standing Reasons", "NPC Memory Anchors", "Open Threads")
STANDIN_MARK = "(stand-in)"
VET_BEHAVIOURS = ("vet_lines", "vet_blend")
# A vetting prompt's proposal line, with (today) or without (before issue 23) its id.
VET_LINE = re.compile(
    r"^- (?:\[(?P<id>\d+)\] )?(?P<term>.+?) \(guessed (?P<category>\w+)\): (?P<quotes>.*)$",
    re.MULTILINE,
)
_SCHEMA_NOTE = re.compile(r"JSON Schema: (\{.*\})\s*$", re.MULTILINE)


def schema_from_prompt(prompt: str) -> dict | None:
    """The schema our OpenAI-compatible client spells out in its system note."""
    match = _SCHEMA_NOTE.search(prompt)
    if not match:
        return None
    try:
        schema = json.loads(match.group(1))
    except ValueError:
        return None
    return schema if isinstance(schema, dict) else None


def _properties(schema: dict | None) -> dict:
    if not schema:
        return {}
    return {str(k).lower(): v for k, v in (schema.get("properties") or {}).items()}


def _hinge_lines(prompt: str) -> list[str]:
    lines = [line.strip().lstrip("-").strip() for line in prompt.splitlines() if "HINGE" in line]
    return [f"- {line[:160]} {STANDIN_MARK}" for line in lines] or [
        f"- No hinge yet {STANDIN_MARK}"
    ]


def digest_object(prompt: str) -> dict[str, str]:
    return {
        "hinge_index": "\n".join(_hinge_lines(prompt)),
        "standing_reasons": f"- Standings unchanged {STANDIN_MARK}",
        "npc_memory_anchors": f"- Anchors kept {STANDIN_MARK}",
        "open_threads": f"- Threads still open {STANDIN_MARK}",
    }


def _fill(schema: dict) -> object:
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        props = schema.get("properties") or {}
        keys = list(schema.get("required") or props)
        return {key: _fill(props.get(key) or {"type": "string"}) for key in keys}
    return {
        "string": f"A value from the model {STANDIN_MARK}.",
        "array": [],
        "integer": 1,
        "number": 1,
        "boolean": True,
    }.get(kind)


def judge_object(prompt: str) -> dict:
    """The Arena's judge question: the stand-in "answers" with the whole context it was
    given (so a good answer holds exactly what the pack holds), known when it has any."""
    context = prompt.split("Context:\n", 1)[-1].split("\n\nQuestion:", 1)[0]
    return {"answer": f"{context.strip()} {STANDIN_MARK}", "known": bool(context.strip())}


def _clause(sentence: str) -> str:
    return sentence.strip().rstrip(".!?…").strip()


def vet_object(prompt: str, behaviour: str) -> dict:
    """Verdicts for every proposal line of a vetting prompt (module doc)."""
    lines = [match.groupdict() for match in VET_LINE.finditer(prompt)]
    quoted = [q for line in lines for q in line["quotes"].split(" | ") if q.strip()]
    terms = []
    for line in lines:
        own = [q for q in line["quotes"].split(" | ") if q.strip()]
        if behaviour == "vet_blend":
            head = line["term"].split()[-1].casefold()
            own = [q for q in quoted if head in q.casefold()] or own
            definition = "; ".join(_clause(q) for q in own) + "."
        else:
            definition = own[0] if own else line["term"]
        verdict = {
            "term": line["term"],
            "keep": True,
            "category": line["category"],
            "definition": definition,
        }
        if line["id"] is not None:
            verdict = {"id": int(line["id"]), **verdict}
        terms.append(verdict)
    return {"terms": terms}


def json_answer(prompt: str, schema: dict | None, behaviour: str) -> str:
    """The JSON text for a JSON-mode request under ``behaviour``."""
    schema = schema or schema_from_prompt(prompt)
    props = _properties(schema)
    if behaviour in VET_BEHAVIOURS:
        if "terms" in props:
            return json.dumps(vet_object(prompt, behaviour))
        behaviour = "ok"  # the rest of a checkpoint under a vetting behaviour
    if "hinge_index" in props or (not props and "Hinge Index" in prompt):
        data: dict = digest_object(prompt)
        if behaviour == "missing_heading":
            data.pop("open_threads")
    elif "known" in props and "answer" in props:
        data = judge_object(prompt)
        if behaviour == "missing_heading":
            data.pop("known")
    elif "definition" in props or (not props and "define" in prompt.lower()):
        data = {"definition": f"A coined term defined by the model {STANDIN_MARK}."}
        if behaviour == "missing_heading":
            data = {}  # the one required field is missing
    elif schema:
        filled = _fill(schema)
        data = filled if isinstance(filled, dict) else {"value": filled}
        if behaviour == "missing_heading" and data:
            data.pop(next(reversed(data)))
    else:
        data = {"answer": f"An answer {STANDIN_MARK}."}
    text = json.dumps(data)
    if behaviour == "malformed_json":
        return text[: max(1, len(text) - 12)]  # cut mid-string: not parseable
    return text


UNLABELLED = f"I look around carefully and wait to see what happens next {STANDIN_MARK}."
REPAIR_MARK = "had no labelled blocks"
FORMAT_START = "Answer only with blocks"
FORMAT_END = "After a block"


def weak_agent_answer(prompt: str, behaviour: str) -> str:
    """A weak relay agent's answer (module doc)."""
    if behaviour == "echo_format":
        block = prompt[prompt.rfind(FORMAT_START) :]
        lines = block.splitlines()[1:]
        return "\n".join(line for line in lines[: _end(lines)] if line.strip())
    if behaviour == "unlabelled_repairable" and REPAIR_MARK in prompt:
        quoted = prompt.rsplit("<<<", 1)[-1].split(">>>", 1)[0].strip()
        return f"PUBLIC: {quoted}"
    return UNLABELLED


def _end(lines: list[str]) -> int:
    for number, line in enumerate(lines):
        if line.startswith(FORMAT_END):
            return number
    return len(lines)


def text_answer(prompt: str, behaviour: str) -> str:
    """The text for a plain request: a markdown digest if one was asked for."""
    if behaviour in ("unlabelled", "unlabelled_repairable", "echo_format"):
        return weak_agent_answer(prompt, behaviour)
    if "Hinge Index" in prompt:
        data = digest_object(prompt)
        sections = [
            f"## {heading}\n{data[key]}"
            for heading, key in zip(DIGEST_HEADINGS, DIGEST_KEYS, strict=True)
            if not (behaviour == "missing_heading" and key == "open_threads")
        ]
        return "\n\n".join(sections)
    if behaviour == "malformed_json":
        return '{"answer": "cut'
    return f"The agents pursue their stated goals and watch each other {STANDIN_MARK}."
