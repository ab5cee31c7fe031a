"""The demo campaign, written for Babel: "The Drowned Archive".

Thirteen rounds after a setup round, a DM and three players. It exercises everything the
context engine cares about: whispers (player ↔ DM), GM notes, monologues, a secret goal
(Cassia's), hinges, tags, and coined terms — proper names (Maelis Orrow, the Geometers),
CamelCase (SaltMarch), ALL_CAPS (KESTREL) and lowercase coinages (tide-script,
lantern-moss, brinewick oil, ashfern tonic, void-chisel).

The campaign itself is data, kept in the transcript format the importer reads
(`fixtures/demo_transcript.json`); `manage.py seed_demo` loads it through that importer.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

DEMO_NAME = "The Drowned Archive (demo)"
TRANSCRIPT_PATH = Path(__file__).resolve().parent / "fixtures" / "demo_transcript.json"


@cache
def _text() -> str:
    return TRANSCRIPT_PATH.read_text(encoding="utf-8")


def transcript() -> dict:
    """The demo as a transcript (the import/export format); a fresh copy every call."""
    return json.loads(_text())
