"""A readable session log for one audience (issue 24, ask 5): what a chosen role may read.

The log is built only from the visibility selectors: turns the viewer reads (published,
in story order, grouped by round, numbered as the viewer is shown them — positions in
their own readable stream for anyone who does not read everything, so nothing counts
hidden turns), the cast with secret goals only where `selectors.secret_readable` allows,
confirmed World Bible entries they read, and the newest digest they read. Nothing here
decides visibility; it only arranges what the selectors hand over.

`session_log_markdown` renders it as Markdown; the printable HTML page is a template
(`campaigns/console/session_log_print.html`) over the same `SessionLog`. Both are
deterministic: no clock, no ids of rows the viewer cannot count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import groupby

from django.core.exceptions import ValidationError
from django.template.loader import render_to_string
from django.utils.text import slugify

from campaigns.models import Experiment, LoreEntry, Participant, Summary, Turn
from campaigns.reads import numbering, selectors
from campaigns.reads.selectors import OMNISCIENT, UnknownRole, Viewer

FORMATS = ("md", "html")

# How a turn's kind reads in the log (whispers name their recipients beside it).
KIND_LABELS = {
    Turn.Kind.NARRATIVE: "narration",
    Turn.Kind.INTEL: "intel",
    Turn.Kind.CHOICE: "choice",
    Turn.Kind.SYSTEM: "system",
    Turn.Kind.ACTION: "action",
    Turn.Kind.WHISPER: "whisper",
    Turn.Kind.GM_NOTE: "GM note",
    Turn.Kind.MONOLOGUE: "monologue",
}


@dataclass(frozen=True)
class LogTurn:
    number: int  # as the viewer is shown it (`numbering.shown_turns`)
    speaker: str
    kind: str
    label: str  # "action", "whisper to DM", "GM note", …
    content: str
    private: bool  # not everyone reads it (a whisper, a GM note, a monologue, a narrowed turn)


@dataclass(frozen=True)
class LogRound:
    round: int
    turns: tuple[LogTurn, ...]


@dataclass(frozen=True)
class LogMember:
    role: str
    kind: str
    bio: str
    secret: str  # "" unless the viewer may read it
    secret_note: str  # "revealed after round 5", "your own, not yet revealed", …


@dataclass(frozen=True)
class LogLore:
    term: str
    category: str
    definition: str


@dataclass(frozen=True)
class SessionLog:
    title: str
    hook: str
    audience: str  # "everything" or the role
    audience_label: str  # "the whole campaign (DM side)", "Thorin's view"
    slug: str  # file name stem
    cast: tuple[LogMember, ...]
    rounds: tuple[LogRound, ...]
    lore: tuple[LogLore, ...]
    digest: tuple[tuple[str, str], ...]  # the newest digest it reads: (heading, body) pairs
    digest_rounds: str  # "rounds 1–4"


def log_viewer(*, experiment: Experiment, viewer: Viewer, as_role: str) -> Viewer:
    """The audience a log is for: ``as_role`` narrows a reader of everything to a role
    (an unknown role is a ``ValidationError`` on ``as``); anyone else reads their own
    role only — asking for another role is refused by the caller (`log_role_refused`)."""
    if not viewer.omniscient:
        return viewer
    if not as_role:
        return OMNISCIENT  # the published log: held turns are not part of it
    try:
        return selectors.viewer_for_role(experiment=experiment, role=as_role)
    except UnknownRole as exc:
        raise ValidationError({"as": [str(exc)]}) from None


def session_log_as(*, experiment: Experiment, reader: Viewer, as_role: str) -> SessionLog:
    """The log ``reader`` asked for: `log_viewer`, then `session_log_for`."""
    viewer = log_viewer(experiment=experiment, viewer=reader, as_role=as_role)
    return session_log_for(experiment=experiment, viewer=viewer)


def log_role_refused(*, viewer: Viewer, as_role: str) -> bool:
    """A reader of one role asking for another role's log (their own is fine)."""
    return not viewer.omniscient and bool(as_role) and as_role != viewer.role


def clean_format(raw: str | None, *, default: str = "md") -> str:
    """``md`` or ``html`` exactly; absent means ``default``, anything else (blank too) a
    ValidationError on ``format``."""
    value = default if raw is None else raw
    if value not in FORMATS:
        raise ValidationError({"format": [f"Unknown format {raw!r}; use one of: md, html."]})
    return value


def session_log_for(*, experiment: Experiment, viewer: Viewer) -> SessionLog:
    """The log of ``experiment`` as ``viewer`` may read it."""
    turns = list(
        selectors.turns_visible_to(experiment=experiment, viewer=viewer)
        .filter(held_at__isnull=True)
        .only("id", "seq", "round", "speaker", "kind", "content", "visibility")
    )
    numbering.shown_turns(experiment=experiment, viewer=viewer, turns=turns)
    rounds = tuple(
        LogRound(round=number, turns=tuple(_log_turn(turn) for turn in group))
        for number, group in groupby(
            sorted(turns, key=lambda t: (t.round, t.seq)), key=lambda t: t.round
        )
    )
    round_now = selectors.current_round(experiment=experiment)
    cast = tuple(
        _member(participant, viewer, round_now)
        for participant in experiment.participants.order_by("order", "id")
    )
    lore = tuple(
        LogLore(term=entry.term, category=entry.get_category_display(), definition=entry.definition)
        for entry in selectors.lore_visible_to(experiment=experiment, viewer=viewer)
        .filter(status=LoreEntry.Status.CONFIRMED)
        .order_by("term", "key", "audience_key", "id")
    )
    digest = (
        selectors.summaries_visible_to(experiment=experiment, viewer=viewer)
        .filter(kind=Summary.Kind.DIGEST)
        # A reader of everything reads every audience's digest: the log shows the one
        # for everyone (a role's own is the newest it reads, as its pack does).
        .filter(**({"audience_key": "*"} if viewer.omniscient else {}))
        .order_by("-id")
        .first()
    )
    audience = viewer.role if viewer.role and not _reads_everything(viewer) else "everything"
    return SessionLog(
        title=experiment.name,
        hook=experiment.hook,
        audience=audience,
        audience_label=(
            "the whole campaign (everything published)"
            if audience == "everything"
            else f"what {viewer.role} may read"
        ),
        slug=f"{slugify(experiment.name) or 'campaign'}-{slugify(audience) or 'role'}-log",
        cast=cast,
        rounds=rounds,
        lore=lore,
        digest=_digest_sections(digest),
        digest_rounds=(
            f"rounds {digest.round_from}–{digest.round_to}"
            if digest and digest.round_from != digest.round_to
            else f"round {digest.round_to}"
            if digest
            else ""
        ),
    )


def _digest_sections(digest: Summary | None) -> tuple[tuple[str, str], ...]:
    """A digest as ``(heading, body)`` pairs: its sections, or its text under one heading."""
    if digest is None:
        return ()
    sections = tuple(
        (str(pair[0]).strip(), str(pair[1]).strip())
        for pair in (digest.sections or ())
        if isinstance(pair, list | tuple) and len(pair) == 2 and str(pair[1]).strip()
    )
    if sections or not digest.text.strip():
        return sections
    return (("Digest", digest.text.strip()),)


def _reads_everything(viewer: Viewer) -> bool:
    return viewer.omniscient and viewer.role is None


def _log_turn(turn: Turn) -> LogTurn:
    label = KIND_LABELS.get(turn.kind, turn.kind)
    visibility = turn.visibility if isinstance(turn.visibility, list) else None
    if turn.kind == Turn.Kind.WHISPER and visibility:
        recipients = [role for role in visibility if role != turn.speaker]
        if recipients:
            label = f"whisper to {', '.join(recipients)}"
    return LogTurn(
        number=turn.shown_seq,
        speaker=turn.speaker,
        kind=turn.kind,
        label=label,
        content=turn.content,
        private=visibility is not None
        or turn.kind in (Turn.Kind.GM_NOTE, Turn.Kind.MONOLOGUE, Turn.Kind.WHISPER),
    )


def _member(participant: Participant, viewer: Viewer, round_now: int) -> LogMember:
    secret, note = "", ""
    if participant.secret and selectors.secret_readable(
        participant=participant, viewer=viewer, round_now=round_now
    ):
        secret = participant.secret
        revealed = participant.reveal_round is not None and round_now > participant.reveal_round
        if revealed:
            note = f"revealed after round {participant.reveal_round}"
        elif viewer.role == participant.role:
            note = "your own, not yet revealed to the others"
        else:
            note = "not yet revealed"
    return LogMember(
        role=participant.role,
        kind=participant.get_kind_display(),
        bio=participant.bio,
        secret=secret,
        secret_note=note,
    )


# --- Markdown -----------------------------------------------------------------------------

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>#|])")


def _inline(text: str) -> str:
    """Text for a heading or a bold label: one line, Markdown's markers escaped."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(text.split()))


def _block(text: str) -> str:
    """A turn's words as a quoted block, kept as written (blank lines kept)."""
    lines = text.strip("\n").splitlines() or [""]
    return "\n".join(f"> {line}".rstrip() for line in lines)


def session_log_markdown(log: SessionLog) -> str:
    out = [f"# {_inline(log.title)} — session log", ""]
    out += [f"*For {_inline(log.audience_label)}.*", ""]
    if log.hook:
        out += [_block(log.hook), ""]
    out += ["## Cast", ""]
    for member in log.cast:
        line = f"- **{_inline(member.role)}** ({_inline(member.kind)})"
        if member.bio:
            line += f": {_inline(member.bio)}"
        out.append(line)
        if member.secret:
            out.append(f"  - Secret goal ({_inline(member.secret_note)}): {_inline(member.secret)}")
    out.append("")
    out += ["## Story", ""]
    if not log.rounds:
        out += ["*Nothing to read yet.*", ""]
    for log_round in log.rounds:
        out += [f"### Round {log_round.round}", ""]
        for turn in log_round.turns:
            out += [
                f"**#{turn.number} · {_inline(turn.speaker)}** *({_inline(turn.label)})*",
                "",
                _block(turn.content),
                "",
            ]
    if log.digest:
        out += [f"## Memory digest ({_inline(log.digest_rounds)})", ""]
        for heading, body in log.digest:
            out += [f"### {_inline(heading)}", "", body, ""]
    if log.lore:
        out += ["## World Bible", ""]
        for entry in log.lore:
            out.append(
                f"- **{_inline(entry.term)}** ({_inline(entry.category)}): "
                f"{_inline(entry.definition)}"
            )
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


# --- one rendering for the console and the API --------------------------------------------

CONTENT_TYPES = {"md": "text/markdown; charset=utf-8", "html": "text/html; charset=utf-8"}
PRINT_TEMPLATE = "campaigns/console/session_log_print.html"


def session_log_render(log: SessionLog, fmt: str) -> tuple[bytes, str, str]:
    """``(body, content type, file name)`` of ``log`` as Markdown or the printable page:
    the same bytes from the console and the API."""
    if fmt == "md":
        body = session_log_markdown(log)
    else:
        body = render_to_string(PRINT_TEMPLATE, {"log": log})
    return body.encode("utf-8"), CONTENT_TYPES[fmt], f"{log.slug}.{fmt}"
