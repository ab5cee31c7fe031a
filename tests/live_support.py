"""Reading the live SSE stream in tests, as a browser's EventSource reads it."""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class Frame:
    id: str
    event: str
    data: dict


def parse_frames(raw: bytes) -> list[Frame]:
    """The events in ``raw`` (comments and ``retry:`` lines skipped)."""
    frames = []
    for block in raw.decode().split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(": ")
            fields[name] = value
        if "event" in fields:
            frames.append(Frame(fields.get("id", ""), fields["event"], json.loads(fields["data"])))
    return frames


def open_live(client, experiment, *, as_role: str = "", last_event_id: str = ""):
    """A connection to the campaign's live stream (its channels fixed now)."""
    url = f"/campaigns/{experiment.pk}/live/"
    if as_role:
        url += f"?as={as_role}"
    headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
    return client.get(url, headers=headers)


def read_live(response) -> bytes:
    """Everything the connection receives until it ends (`BABEL_LIVE_MAX_SECONDS`)."""
    return b"".join(response.streaming_content)


def drafts_by_id(frames: list[Frame]) -> dict[str, dict]:
    """Each draft's pieces joined: ``{draft_id: {"text", "kind", "speaker", ...}}``."""
    drafts: dict[str, dict] = {}
    for frame in frames:
        if frame.event != "draft":
            continue
        draft = drafts.setdefault(frame.data["draft_id"], {**frame.data, "text": "", "seqs": []})
        draft["text"] += frame.data["text"]
        draft["seqs"].append(frame.data["seq"])
    return drafts
