"""The numbers inside a pack's item references, as the reader is shown them.

A pack names what it holds by reference (``turn:42``, ``stub:43``, ``lore:7``): database
ids, global counters whose gaps count what the reader cannot read. For a viewer who does
not read everything they are rewritten into that viewer's own positions
(`selectors.turn_positions`, `selectors.row_positions`): ``turn:#12`` is the twelfth turn
they read, ``stub:#12`` a whisper they may know happened after it, ``lore:#3`` the third
World Bible entry they read. Omniscient readers keep the ids.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace

from campaigns.models import Experiment, Turn
from campaigns.reads import selectors
from campaigns.reads.selectors import Viewer
from context_engine.types import Pack

_REF = re.compile(r"\b(turn|stub|lore):(\d+)\b")  # also inside "turns:turn:3..turn:9"


def shown_refs(*, experiment: Experiment | int, viewer: Viewer, refs: Iterable[str]) -> dict:
    """``ref -> the ref shown to viewer`` for every ref given (unchanged if not numbered)."""
    refs = set(refs)
    if not selectors.numbers_are_positions(viewer):
        return {ref: ref for ref in refs}
    experiment_id = experiment if isinstance(experiment, int) else experiment.pk
    found = [(m[1], int(m[2])) for ref in refs for m in _REF.finditer(ref)]
    turn_ids = {number for kind, number in found if kind in ("turn", "stub")}
    seqs = dict(
        Turn.objects.filter(experiment_id=experiment_id, pk__in=turn_ids).values_list("pk", "seq")
    )
    positions = selectors.turn_positions(
        experiment=experiment_id, viewer=viewer, seqs=seqs.values()
    )
    lore = {}
    if any(kind == "lore" for kind, _ in found):
        lore = selectors.row_positions(
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
    if not selectors.numbers_are_positions(viewer):
        return pack
    return pack_as_shown(
        pack, shown_refs(experiment=experiment, viewer=viewer, refs=pack_refs(pack))
    )
