"""`/campaigns/<id>/context/<role>/` — the context inspector (`/context debug`, visible).

What one agent's pack holds and why: the budget bar by section, every item included,
partly included or cut with its reason and tokens, strain, and the messages as sent.
A player opens only their own role's inspector (another role's is a 404).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from django.views.decorators.http import require_GET

from campaigns.console import access as console_access
from campaigns.console.forms import InspectorForm
from campaigns.console.views.base import campaign_context, login_required, page
from campaigns.models import LoreEntry
from campaigns.reads import selectors
from campaigns.reads.numbering import pack_as_shown, pack_refs, shown_refs
from campaigns.services.context import pack_for_role
from campaigns.services.memory.retrieval import pin_reasons
from campaigns.services.windows import window_for_role
from context_engine.render import to_genai, to_openai_messages
from context_engine.strain import NOTICE
from context_engine.types import Pack

TEMPLATE = "campaigns/console/context.html"
SECTION_COLOURS = {
    "identity": "#4c6ef5",
    "rules": "#868e96",
    "frozen": "#7950f2",
    "state": "#15aabf",
    "digest": "#f59f00",
    "recent": "#40c057",
    "retrieval": "#e64980",
    "input": "#fa5252",
}
STRAIN_LABELS = {
    "normal": "Normal",
    "strain_1": "Strain I",
    "strain_2": "Strain II",
    "strain_3": "Strain III",
}


@dataclass(frozen=True)
class ItemRow:
    ref: str
    kind: str
    tokens: int
    state: str  # included | partly | cut
    reason: str
    label: str = ""  # "Cassia, R3: “I open the door…”", a lore entry's term

    @property
    def name(self) -> str:
        return self.label or self.ref


@dataclass(frozen=True)
class SectionRow:
    name: str
    budget: int  # its own share
    borrowed: int
    lent_why: str  # the trim log's reason for the loan, "" when nothing was lent
    tokens: int
    trimmed: bool
    colour: str
    share: float  # % of the total budget this section's tokens take
    items: tuple[ItemRow, ...]

    def count(self, state: str) -> int:
        return sum(1 for item in self.items if item.state == state)

    @property
    def included(self) -> int:
        return self.count("included")

    @property
    def partly(self) -> int:
        return self.count("partly")

    @property
    def cut(self) -> int:
        return self.count("cut")


REASONS = {
    ("recent", "turn"): "in the recent window",
    ("recent", "anchor"): "hinge anchor (kept beyond the window)",
    ("recent", "stub"): "whisper existence only (its content is not readable)",
    ("retrieval", "turn"): "full-text match for the input (dormant fact)",
    ("retrieval", "lore"): "archived lore matching the input",
    ("retrieval", "state"): "archived state field matching the input",
    ("frozen", "hook"): "campaign hook (never cut)",
    ("frozen", "bio"): "public character profile (never cut)",
    ("frozen", "lore_name"): "lore named only: the frozen budget is full",
    ("digest", "digest"): "the newest memory digest this role reads",
}


def _item_reason(section: str, kind: str, ref: str, terms: dict[str, str], context: str) -> str:
    """Why an included item is in the pack, from what the engine records about it.

    For lore the keyword that fired is looked up: the entry's term in the window or input.
    """
    if kind == "lore" and section == "frozen":
        term = terms.get(ref, "")
        if term and term.lower() in context:
            return f"keyword “{term}” is in the window or input"
        return "ranked by mentions and recency (not named right now)"
    return REASONS.get((section, kind), f"{section}: {kind.replace('_', ' ')}")


def inspect(
    pack: Pack,
    terms: dict[str, str] | None = None,
    pins: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
) -> dict:
    """Sections with every item's fate, for the template. ``terms``: lore ref → term;
    ``pins``: retrieval ref → why the role's own /search, /lore or /timeline pinned it;
    ``labels``: ref → the name a person reads (`item_labels`)."""
    terms = terms or {}
    pins = pins or {}
    labels = labels or {}
    context = " ".join(
        s.text for s in pack.sections if s.name in ("recent", "input", "retrieval")
    ).lower()
    events: dict[tuple[str, str], list] = {}
    for event in pack.trim_log:
        events.setdefault((event.section, event.ref), []).append(event)
    total = max(pack.budget, pack.total_tokens, 1)
    sections = []
    for section in pack.sections:
        rows = []
        seen = set()
        for item in section.items:
            seen.add(item.ref)
            trims = events.get((section.name, item.ref), [])
            partly = [e for e in trims if e.action in ("degraded", "truncated", "summarised")]
            reason = (
                "; ".join(f"{e.action}: {e.reason}" for e in partly)
                or (pins.get(item.ref) if section.name == "retrieval" else None)
                or _item_reason(section.name, item.kind, item.ref, terms, context)
            )
            rows.append(
                ItemRow(
                    item.ref,
                    item.kind,
                    item.tokens,
                    "partly" if partly else "included",
                    reason,
                    labels.get(item.ref, ""),
                )
            )
        for (name, ref), trims in events.items():
            if name != section.name or ref in seen:
                continue
            for event in trims:
                # Not in the pack: dropped or summarised away (its gist may live on in the
                # digest) is cut; a degraded or truncated remnant is partly included.
                state = "partly" if event.action in ("degraded", "truncated") else "cut"
                rows.append(
                    ItemRow(
                        ref,
                        event.cause,
                        event.tokens_saved,
                        state,
                        f"{event.action}: {event.reason}",
                        labels.get(ref, ""),
                    )
                )
        sections.append(
            SectionRow(
                name=section.name,
                budget=section.budget,
                borrowed=section.borrowed,
                lent_why=next(
                    (
                        e.reason
                        for e in pack.trim_log
                        if e.section == section.name and e.action == "borrowed"
                    ),
                    "",
                ),
                tokens=section.tokens,
                trimmed=section.trimmed,
                colour=SECTION_COLOURS.get(section.name, "#adb5bd"),
                share=round(100 * section.tokens / total, 2),
                items=tuple(rows),
            )
        )
    system, contents = to_genai(pack)
    return {
        "pack": pack,
        "sections": sections,
        "free_share": round(max(0.0, 100 * (total - pack.total_tokens) / total), 2),
        "strain_label": STRAIN_LABELS.get(pack.strain, pack.strain),
        "notice": NOTICE if pack.strain == "strain_3" else "",
        "openai": json.dumps(to_openai_messages(pack), ensure_ascii=False, indent=2),
        "gemini": json.dumps(
            {"system_instruction": system, "contents": contents}, ensure_ascii=False, indent=2
        ),
    }


def compare(
    a: Pack, b: Pack, labels_a: dict[str, str] | None = None, labels_b: dict[str, str] | None = None
) -> dict:
    """What each pack holds that the other does not, by item reference (each named as
    its own pack's role reads it)."""
    labels_a, labels_b = labels_a or {}, labels_b or {}
    refs_a = {(s.name, i.ref): i for s in a.sections for i in s.items}
    refs_b = {(s.name, i.ref): i for s in b.sections for i in s.items}
    only_a = sorted(k for k in refs_a if k not in refs_b)
    only_b = sorted(k for k in refs_b if k not in refs_a)
    return {
        "only_a": [(s, labels_a.get(r, r), refs_a[(s, r)].tokens) for s, r in only_a],
        "only_b": [(s, labels_b.get(r, r), refs_b[(s, r)].tokens) for s, r in only_b],
        "shared": len(set(refs_a) & set(refs_b)),
    }


FIRST_WORDS = 8


def _first_words(text: str) -> str:
    words = text.split()
    head, cut = " ".join(words[:FIRST_WORDS]), len(words) > FIRST_WORDS
    if len(head) > 60:
        head, cut = head[:60].rstrip(), True
    return head + ("…" if cut else "")


def item_labels(access, role: str, pack: Pack | None, terms: dict[str, str]) -> dict[str, str]:
    """Names for a pack's items: a turn by speaker, round and first words (read through
    the visibility selector as ``role``: only turns that role reads are named), lore by
    its term, a whisper stub without its content."""
    if pack is None:
        return {}
    refs = {i.ref for s in pack.sections for i in s.items} | {e.ref for e in pack.trim_log}
    ids = {int(r.split(":", 1)[1]) for r in refs if r.startswith("turn:") and r[5:].isdigit()}
    labels = {ref: f"lore “{term}”" for ref, term in terms.items() if ref in refs}
    if ids:
        viewer = selectors.viewer_for_role(experiment=access.experiment, role=role)
        rows = (
            selectors.turns_visible_to(experiment=access.experiment, viewer=viewer)
            .filter(pk__in=ids)
            .values_list("pk", "speaker", "round", "content")
        )
        for pk, speaker, round_, content in rows:
            labels[f"turn:{pk}"] = f"{speaker}, R{round_}: “{_first_words(content)}”"
    for ref in refs:
        if ref.startswith("stub:"):
            labels[ref] = "a whisper (that it happened, not what it said)"
    return labels


def _lore_terms(access, packs) -> dict[str, str]:
    """Terms of the lore entries these packs hold (they are already in the packs' text)."""
    ids = {
        int(item.ref.split(":", 1)[1])
        for pack in packs
        if pack is not None
        for section in pack.sections
        for item in section.items
        if item.ref.startswith("lore:") and item.ref.split(":", 1)[1].isdigit()
    }
    rows = LoreEntry.objects.filter(experiment=access.experiment, pk__in=ids).values_list(
        "pk", "term"
    )
    return {f"lore:{pk}": term for pk, term in rows}


def _pack(access, role: str, input_text: str) -> Pack:
    """The pack the relay would send: fitted to the role's model window (the cap shown)."""
    window = window_for_role(experiment=access.experiment, role=role)
    return pack_for_role(
        experiment=access.experiment, role=role, input_text=input_text, window=window
    )


@login_required
@require_GET
def inspector(request, pk, role):
    access = console_access.experiment_for(request, pk)
    console_access.check_context_role(access, role)
    roles = [r for r in console_access.roles_of(access) if r != role]
    form = InspectorForm(request.GET or None, roles=roles)
    input_text, other = "", ""
    if form.is_bound and form.is_valid():
        input_text = form.cleaned_data["input"]
        other = form.cleaned_data["compare"]
    if other:
        console_access.check_context_role(access, other)
    pack = _pack(access, role, input_text)
    other_pack = _pack(access, other, input_text) if other else None
    terms = _lore_terms(access, [pack, other_pack])
    # Named while the refs are still ids (each label read as its own role), then every
    # reference as this reader is shown them: positions in their own stream, not ids.
    labels = item_labels(access, role, pack, terms)
    other_labels = item_labels(access, other, other_pack, terms) if other_pack else {}
    pins = pin_reasons(experiment_id=access.experiment.pk, role=role)
    other_pins = pin_reasons(experiment_id=access.experiment.pk, role=other) if other else {}
    shown = shown_refs(
        experiment=access.experiment,
        viewer=access.viewer,
        refs={*pack_refs(pack), *(pack_refs(other_pack) if other_pack else ()), *pins, *other_pins},
    )
    pack = pack_as_shown(pack, shown)
    other_pack = pack_as_shown(other_pack, shown) if other_pack is not None else None
    terms, labels, other_labels, pins, other_pins = (
        {shown.get(ref, ref): value for ref, value in mapping.items()}
        for mapping in (terms, labels, other_labels, pins, other_pins)
    )
    ctx = campaign_context(access, access.viewer, active="console:context")
    ctx.update(inspect(pack, terms, pins, labels))
    ctx.update({"role": role, "form": form, "roles": console_access.roles_of(access)})
    if other_pack is not None:
        ctx["other"] = {
            "role": other,
            **inspect(other_pack, terms, other_pins, other_labels),
            **compare(pack, other_pack, labels, other_labels),
        }
    status = 200 if not form.is_bound or form.is_valid() else 422
    return page(request, TEMPLATE, ctx, partial="inspector", status=status)
