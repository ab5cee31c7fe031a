"""World Bible work a DM does in bulk: confirm or reject many entries, merge duplicates.

Built on `lore_update` so every change is a `LoreRevision`. All-or-nothing: one bad id
and nothing is stored.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from campaigns.models import LoreEntry, LoreRevision
from campaigns.services.lore import actor_for, lore_update

BULK_ACTIONS = {"confirm": LoreEntry.Status.CONFIRMED, "reject": LoreEntry.Status.REJECTED}


@transaction.atomic
def lore_bulk_status(*, entries: list[LoreEntry], user, action: str) -> int:
    """Confirm or reject every entry; returns how many changed."""
    if action not in BULK_ACTIONS:
        raise ValidationError({"action": ["Choose confirm or reject."]})
    if not entries:
        raise ValidationError({"ids": ["Select at least one entry."]})
    changed = 0
    for entry in entries:
        before = entry.status
        after = lore_update(entry=entry, user=user, status=BULK_ACTIONS[action])
        changed += before != after.status
    return changed


@transaction.atomic
def lore_merge(*, keep: LoreEntry, merge: LoreEntry, user) -> LoreEntry:
    """Fold ``merge`` into ``keep``: sources, mentions and seen rounds join ``keep``;
    ``merge`` is rejected (never deleted), with a revision on both saying so.

    Only entries for the same audience merge: joining audiences would show one
    audience's sources to another.
    """
    if keep.pk == merge.pk:
        raise ValidationError({"merge": ["Choose two different entries."]})
    keep = LoreEntry.objects.select_for_update().get(pk=keep.pk)
    merge = LoreEntry.objects.select_for_update().get(pk=merge.pk)
    if keep.experiment_id != merge.experiment_id:
        raise ValidationError({"merge": ["Both entries must belong to this campaign."]})
    if keep.audience_key != merge.audience_key:
        raise ValidationError(
            {"merge": ["These entries have different audiences; only same-audience ones merge."]}
        )
    old = {
        "mention_count": keep.mention_count,
        "first_seen_round": keep.first_seen_round,
        "last_seen_round": keep.last_seen_round,
    }
    keep.mention_count += merge.mention_count
    keep.first_seen_round = min(keep.first_seen_round, merge.first_seen_round)
    keep.last_seen_round = max(keep.last_seen_round, merge.last_seen_round)
    if not keep.definition and merge.definition:
        old["definition"] = keep.definition
        keep.definition = merge.definition
    keep.save()
    keep.source_turns.add(*merge.source_turns.all())
    changes = {field: [value, getattr(keep, field)] for field, value in old.items()}
    changes["merged"] = [None, f"{merge.term} (id {merge.pk})"]
    actor = actor_for(user)
    LoreRevision.objects.create(entry=keep, actor=actor, user=user, changes=changes)
    LoreRevision.objects.create(
        entry=merge,
        actor=actor,
        user=user,
        changes={"status": [merge.status, "rejected"], "merged_into": [None, keep.term]},
    )
    merge.status = LoreEntry.Status.REJECTED
    merge.save(update_fields=["status", "updated_at"])
    return keep
