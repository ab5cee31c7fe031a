"""The numbers a viewer is shown: turn and row positions, and the references in a pack.

A turn's ``seq`` and every primary key are global counters: between two turns a player
reads, the gap in either counts the turns (lore entries, digests) they cannot read. So a
viewer who does not read everything is shown positions in their own readable stream
instead — turn #n is the n-th turn they read, entry #n the n-th entry — and the URLs
and API lookups they use take those positions back (`turn_at_position`, ...).
Omniscient readers (owner, staff, judges) keep the real numbers. What each viewer reads
is the selectors' to decide (`campaigns.reads.selectors`); this module only counts it.

A pack names what it holds by reference (``turn:42``, ``stub:43``, ``lore:7``): database
ids, global counters whose gaps count what the reader cannot read. For a viewer who does
not read everything they are rewritten into that viewer's own positions (`turn_positions`,
`row_positions`): ``turn:#12`` is the twelfth turn they read, ``stub:#12`` a whisper
they may know happened after it, ``lore:#3`` the third World Bible entry they read.
Omniscient readers keep the ids.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import replace

from django.db.models import QuerySet

from campaigns.models import Experiment, LoreEntry, Turn
from campaigns.reads import selectors
from campaigns.reads.selectors import Viewer
from context_engine.types import Pack

_REF = re.compile(r"\b(turn|stub|lore):(\d+)\b")  # also inside "turns:turn:3..turn:9"


def shown_refs(*, experiment: Experiment | int, viewer: Viewer, refs: Iterable[str]) -> dict:
    """``ref -> the ref shown to viewer`` for every ref given (unchanged if not numbered)."""
    refs = set(refs)
    if not numbers_are_positions(viewer):
        return {ref: ref for ref in refs}
    experiment_id = experiment if isinstance(experiment, int) else experiment.pk
    found = [(m[1], int(m[2])) for ref in refs for m in _REF.finditer(ref)]
    turn_ids = {number for kind, number in found if kind in ("turn", "stub")}
    seqs = dict(
        Turn.objects.filter(experiment_id=experiment_id, pk__in=turn_ids).values_list("pk", "seq")
    )
    positions = turn_positions(experiment=experiment_id, viewer=viewer, seqs=seqs.values())
    lore = {}
    if any(kind == "lore" for kind, _ in found):
        lore = row_positions(
            selectors.lore_visible_to(experiment=experiment_id, viewer=viewer), viewer
        )

    def one(match: re.Match) -> str:
        kind, number = match[1], int(match[2])
        position = lore.get(number) if kind == "lore" else positions.get(seqs.get(number, -1))
        return f"{kind}:#{position}" if position is not None else f"{kind}:#?"

    return {ref: _REF.sub(one, ref) for ref in refs}


def pack_refs(pack: Pack) -> set[str]:
    refs = {item.ref for section in pack.sections for item in section.items}
    return refs | {event.ref for event in pack.trim_log}


def pack_as_shown(pack: Pack, shown: dict[str, str]) -> Pack:
    """``pack`` with its references rewritten by ``shown`` (from `shown_refs`)."""
    sections = tuple(
        replace(
            section,
            items=tuple(replace(item, ref=shown.get(item.ref, item.ref)) for item in section.items),
        )
        for section in pack.sections
    )
    trim_log = tuple(replace(event, ref=shown.get(event.ref, event.ref)) for event in pack.trim_log)
    return replace(pack, sections=sections, trim_log=trim_log)


def pack_shown_to(*, experiment: Experiment | int, viewer: Viewer, pack: Pack) -> Pack:
    """``pack`` as ``viewer`` is shown it (the API's and the inspector's packs)."""
    if not numbers_are_positions(viewer):
        return pack
    return pack_as_shown(
        pack, shown_refs(experiment=experiment, viewer=viewer, refs=pack_refs(pack))
    )


def numbers_are_positions(viewer: Viewer) -> bool:
    return not viewer.omniscient


def turn_positions(
    *, experiment: Experiment | int, viewer: Viewer, seqs: Iterable[int]
) -> dict[int, int]:
    """``seq -> what the viewer is shown for it``: the real seq for omniscient readers,
    else how many turns the viewer reads up to and including that seq (for a seq they
    cannot read: of the readable turns before it, so a cut or a stub is placed among
    them without naming a hidden number)."""
    wanted = sorted(set(seqs))
    if not wanted or not numbers_are_positions(viewer):
        return {seq: seq for seq in wanted}
    readable = selectors.turns_visible_to(experiment=experiment, viewer=viewer).order_by()
    before = readable.filter(seq__lt=wanted[0]).count()
    inside = list(
        readable.filter(seq__gte=wanted[0], seq__lte=wanted[-1])
        .order_by("seq")
        .values_list("seq", flat=True)
    )
    return {seq: before + bisect_right(inside, seq) for seq in wanted}


def turn_at_position(*, experiment: Experiment | int, viewer: Viewer, position: int) -> Turn | None:
    """The turn the viewer knows as ``position`` (see `turn_positions`), or None."""
    readable = selectors.turns_visible_to(experiment=experiment, viewer=viewer)
    if not numbers_are_positions(viewer):
        return readable.filter(seq=position).first()
    if position < 1:
        return None
    return readable[position - 1 : position].first()


def shown_turns(*, experiment: Experiment | int, viewer: Viewer, turns: Iterable) -> list:
    """``turns`` with ``shown_seq`` and ``shown_id`` set: what this viewer is shown for
    each (the real seq and id for omniscient readers, else the position, for both)."""
    turns = list(turns)
    positions = turn_positions(
        experiment=experiment, viewer=viewer, seqs=[turn.seq for turn in turns]
    )
    for turn in turns:
        turn.shown_seq = positions[turn.seq]
        turn.shown_id = turn.pk if viewer.omniscient else positions[turn.seq]
    return turns


def row_positions(queryset: QuerySet, viewer: Viewer) -> dict[int, int]:
    """``pk -> shown number`` for the rows of a viewer's readable ``queryset`` (lore
    entries, digests): the real pk for omniscient readers, else the row's position in
    the readable rows by pk (1 = the oldest). These tables are small per experiment."""
    pks = list(queryset.order_by("pk").values_list("pk", flat=True))
    if not numbers_are_positions(viewer):
        return {pk: pk for pk in pks}
    return {pk: index for index, pk in enumerate(pks, start=1)}


def row_at_position(queryset: QuerySet, viewer: Viewer, position: int):
    """The row of a viewer's readable ``queryset`` shown to them as ``position``."""
    if not numbers_are_positions(viewer):
        return queryset.filter(pk=position).first()
    if position < 1:
        return None
    return queryset.order_by("pk")[position - 1 : position].first()


def shown_lore(*, experiment: Experiment | int, viewer: Viewer, entries: Iterable) -> list:
    """Lore ``entries`` (readable by ``viewer``) with ``shown_id`` set (`row_positions`),
    and the seqs of their ``visible_sources``, if prefetched, as the viewer is shown them."""
    entries = list(entries)
    positions = row_positions(
        selectors.lore_visible_to(experiment=experiment, viewer=viewer), viewer
    )
    for entry in entries:
        entry.shown_id = positions.get(entry.pk)
        if hasattr(entry, "visible_sources"):
            shown_turns(experiment=experiment, viewer=viewer, turns=entry.visible_sources)
    return entries


def lore_at(*, experiment: Experiment | int, viewer: Viewer, shown_id: int) -> LoreEntry | None:
    """The lore entry ``viewer`` knows as ``shown_id`` (its id, or its position)."""
    return row_at_position(
        selectors.lore_visible_to(experiment=experiment, viewer=viewer), viewer, shown_id
    )


def shown_summaries(
    *, experiment: Experiment | int, viewer: Viewer, summaries: Iterable, sources: bool = True
) -> list:
    """Summaries readable by ``viewer`` with ``shown_id`` and ``shown_covered_seq`` set,
    and (``sources``) ``shown_source_ids``: their source turns the viewer reads, as shown
    to them. For a reader who does not read everything the audience is shown as their
    own role alone (``shown_audience``): who else a digest is for is not theirs to read."""
    summaries = list(summaries)
    positions = row_positions(
        selectors.summaries_visible_to(experiment=experiment, viewer=viewer), viewer
    )
    covered = turn_positions(
        experiment=experiment, viewer=viewer, seqs=[s.covered_seq for s in summaries]
    )
    source_ids = {pk for s in summaries for pk in (s.source_turn_ids or ())} if sources else ()
    readable = selectors.turns_visible_to(experiment=experiment, viewer=viewer).filter(
        pk__in=source_ids
    )
    seq_of = dict(readable.values_list("pk", "seq")) if sources else {}
    source_positions = turn_positions(experiment=experiment, viewer=viewer, seqs=seq_of.values())
    for summary in summaries:
        summary.shown_id = positions.get(summary.pk)
        summary.shown_covered_seq = covered[summary.covered_seq]
        summary.shown_audience = (
            summary.audience if viewer.omniscient else [viewer.role] if viewer.role else []
        )
        if not sources:
            continue
        summary.shown_source_ids = [
            (pk if viewer.omniscient else source_positions[seq_of[pk]])
            for pk in (summary.source_turn_ids or ())
            if pk in seq_of
        ]
    return summaries
