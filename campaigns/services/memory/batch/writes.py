"""A hydration batch's writes (`_Writes`, the base of `Batch`): the statistics, the new
entries, their sources, updates and revisions, in a handful of bulk statements, inside
the transaction that holds the cursor lock."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from campaigns.models import LoreEntry, LoreRevision, VocabularyStat
from campaigns.services.memory.batch.entries import _STAT_FIELDS, HYDRATE_ACTOR


class _Writes:
    """The writes of a `Batch`: `flush` writes what `add` folded in."""

    def flush(self) -> None:
        """Write the statistics, new entries, sources, updates and revisions."""
        self._flush_stats()
        self._flush_created()
        self._flush_updated()

    def _flush_stats(self) -> None:
        creates, updates = [], []
        for slot in sorted(self.dirty):
            akey, key = slot
            stats = self.stats[slot]
            values = {name: getattr(stats, name) for name in _STAT_FIELDS}
            values["source_turn_ids"] = list(stats.source_ids)
            if slot in self.stat_pks:
                updates.append(VocabularyStat(pk=self.stat_pks[slot], **values))
            else:
                audience = self.stat_audience[akey]
                creates.append(
                    VocabularyStat(
                        experiment=self.experiment,
                        audience=None if audience is None else list(audience),
                        audience_key=akey,
                        key=key,
                        **values,
                    )
                )
        VocabularyStat.objects.bulk_create(creates, batch_size=500)
        VocabularyStat.objects.bulk_update(
            updates, [*_STAT_FIELDS, "source_turn_ids"], batch_size=500
        )
        self.dirty.clear()

    def _flush_created(self) -> None:
        through = LoreEntry.source_turns.through
        links, revisions = [], []
        for state in self.created:
            try:
                with transaction.atomic():
                    entry = LoreEntry.objects.create(
                        experiment=self.experiment,
                        term=state.term,
                        key=state.key,
                        category=state.category,
                        definition=state.definition,
                        audience=None if state.audience is None else list(state.audience),
                        audience_key=state.akey,
                        first_seen_round=state.first_seen_round,
                        last_seen_round=state.last_seen_round,
                        mention_count=state.mention_count,
                        invalid_from_round=state.invalid_from_round,
                        status=LoreEntry.Status.PROPOSED,
                        origin=LoreEntry.Origin.EXTRACTED,
                    )
            except IntegrityError:  # a DM (or another writer) made it meanwhile: theirs wins
                state.pk = None
                continue
            state.pk = entry.pk
            links += [through(loreentry_id=entry.pk, turn_id=tid) for tid in state.sources]
            revisions.append(
                LoreRevision(
                    entry_id=entry.pk,
                    actor=HYDRATE_ACTOR,
                    changes={
                        "term": [None, entry.term],
                        "category": [None, entry.category],
                        "definition": [None, entry.definition],
                        "audience": [None, entry.audience],
                        "status": [None, entry.status],
                    },
                )
            )
        self.created = [state for state in self.created if state.pk is not None]
        through.objects.bulk_create(links, batch_size=1000, ignore_conflicts=True)
        LoreRevision.objects.bulk_create(revisions, batch_size=500)

    def _flush_updated(self) -> None:
        changed = [s for s in self.entries if not s.new and s.changes]
        if not changed:
            return
        # A DM may have locked or rejected an entry since the batch read it: theirs wins.
        current = {
            pk: (locked, origin, status)
            for pk, locked, origin, status in LoreEntry.objects.select_for_update()
            .filter(pk__in=[s.pk for s in changed])
            .values_list("pk", "locked", "origin", "status")
        }
        through = LoreEntry.source_turns.through
        rows, links, revisions = [], [], []
        now = timezone.now()
        for state in changed:
            locked, origin, status = current.get(state.pk, (True, "dm", "rejected"))
            if locked or origin == LoreEntry.Origin.DM:
                continue
            if status == LoreEntry.Status.REJECTED and set(state.changes) - {
                "invalid_from_round",
                "turn",
            }:
                continue
            added = [t for t in state.sources]
            links += [through(loreentry_id=state.pk, turn_id=tid) for tid in added]
            rows.append(
                LoreEntry(
                    pk=state.pk,
                    mention_count=state.mention_count,
                    first_seen_round=state.first_seen_round,
                    last_seen_round=state.last_seen_round,
                    invalid_from_round=state.invalid_from_round,
                    updated_at=now,
                )
            )
            changes = dict(state.changes)
            if added:
                changes["source_turns"] = [None, added[0] if len(added) == 1 else added]
            revisions.append(LoreRevision(entry_id=state.pk, actor=HYDRATE_ACTOR, changes=changes))
        LoreEntry.objects.bulk_update(
            rows,
            [
                "mention_count",
                "first_seen_round",
                "last_seen_round",
                "invalid_from_round",
                "updated_at",
            ],
            batch_size=500,
        )
        through.objects.bulk_create(links, batch_size=1000, ignore_conflicts=True)
        LoreRevision.objects.bulk_create(revisions, batch_size=500)
        self.updated = [s for s in self.updated if s.pk in {r.pk for r in rows}]
        self.invalidated = [s for s in self.invalidated if s.new or s.pk in {r.pk for r in rows}]
