"""The postings cache (`campaigns.reads.postings_cache`) gives exactly the postings a
fresh read gives, reads only what it does not hold, and is blind to hidden writes.

Its entries are stored only from reads outside a transaction, so these tests commit
(``transaction=True``). Hypothesis interleaves random writes — appends, inserts below
the newest seq, edits, bulk edits, changes of audience, kind and speaker, holds,
deletions, an import's waiting turns and their indexing — with cached reads by every
kind of viewer, and each read must equal a fresh one (`search.postings_query`).
"""

from __future__ import annotations

import pytest
from django.db import transaction
from django.db.models import Max
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from campaigns.models import SearchBacklog, Turn
from campaigns.reads import hit_cache, packs, postings_cache, search, window_cache
from campaigns.reads.selectors import OMNISCIENT, Viewer
from campaigns.services.context import pack_for_role
from context_engine.ranking import make_query
from context_engine.retrieval import ranked_hits
from tests.campaigns.test_turn_terms import (
    AUDIENCES,
    KINDS,
    ROLES,
    WORDS,
    _apply,
    _stored,
    texts,
)
from tests.factories import make_experiment, make_turn

pytestmark = pytest.mark.django_db(transaction=True)

VIEWERS = (
    Viewer(role="Thorin"),
    Viewer(role="Cassia"),
    Viewer(role="DM", is_dm=True),
    OMNISCIENT,
)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("read"), st.sampled_from(VIEWERS), st.lists(st.sampled_from(WORDS))),
        st.tuples(st.just("append"), texts, st.sampled_from(KINDS), st.sampled_from(AUDIENCES)),
        st.tuples(st.just("low"), texts, st.sampled_from(AUDIENCES)),
        st.tuples(st.just("edit"), st.integers(0, 20), texts),
        st.tuples(st.just("bulk_edit"), st.integers(0, 20), texts),
        st.tuples(st.just("audience"), st.integers(0, 20), st.sampled_from(AUDIENCES)),
        st.tuples(st.just("recast"), st.integers(0, 20), st.sampled_from(KINDS)),
        st.tuples(st.just("speaker"), st.integers(0, 20), st.sampled_from(ROLES)),
        st.tuples(st.just("hold"), st.integers(0, 20), st.booleans()),
        st.tuples(st.just("delete"), st.integers(0, 20)),
        st.tuples(st.just("import"), texts),
        st.tuples(st.just("index")),
    ),
    max_size=24,
)


@pytest.fixture(autouse=True)
def _empty_cache():
    postings_cache.clear()
    hit_cache.clear()
    window_cache.clear()
    yield
    postings_cache.clear()
    hit_cache.clear()
    window_cache.clear()


def stamp(experiment, viewer: Viewer) -> postings_cache.Stamp:
    """As the pack loader makes it (`context.pack_input_for_role`)."""
    last = Turn.objects.filter(experiment=experiment).aggregate(seq=Max("seq"))["seq"] or 0
    counted = packs.turn_change_count_query(experiment_id=experiment.pk, viewer=viewer).rows()
    return postings_cache.Stamp(
        experiment_id=experiment.pk,
        created_at=experiment.created_at,
        viewer=viewer,
        changes=counted[0][0] if counted else 0,
        last_seq=last,
    )


class Reader:
    """`search.postings_query` as the cache calls it, remembering each call."""

    def __init__(self, experiment, viewer: Viewer):
        self.experiment, self.viewer = experiment, viewer
        self.calls: list[tuple[list[str], list[int] | None]] = []

    def __call__(self, words: list[str], since: list[int] | None = None) -> dict:
        self.calls.append((list(words), since))
        query = search.postings_query(
            experiment_id=self.experiment.pk,
            viewer=self.viewer,
            words=words,
            backlog=False,
            since=since,
        )
        return search.postings_by_word(words, query.rows() if query else [])


def cached(experiment, viewer: Viewer, words: list[str], reader: Reader | None = None) -> dict:
    reader = reader or Reader(experiment, viewer)
    found = postings_cache.postings(stamp(experiment, viewer), words, reader)
    return {word: _rows(found[word]) for word in words}


def ranked(
    experiment, viewer: Viewer, query, reader: Reader | None = None, ranks=None, at=None
) -> list:
    """The best 3 turns for ``query``, from the cache's ranking under the viewer's stamp
    (``at``: under that stamp instead; ``ranks``: a list that each ranking actually made
    is appended to)."""

    def rank(postings):
        ids = ranked_hits(query, postings, 3)
        if ranks is not None:
            ranks.append(ids)
        return ids

    reader = reader or Reader(experiment, viewer)
    return postings_cache.ranked(at or stamp(experiment, viewer), query, 3, reader, rank)


def ranked_afresh(experiment, viewer: Viewer, query) -> list:
    return ranked_hits(query, Reader(experiment, viewer)(query.words), 3)


def fresh(experiment, viewer: Viewer, words: list[str]) -> dict:
    found = Reader(experiment, viewer)(list(dict.fromkeys(words)))
    return {word: _rows(found[word]) for word in words}


def _rows(postings) -> list[tuple[int, int, int]]:
    """A word's postings as plain (turn id, seq, tokens) tuples, newest first."""
    return [tuple(row) for row in postings.tolist()]


def _low_insert(experiment, content: str, audience) -> None:
    """A turn written below the experiment's newest seq (in a gap a delete left), as an
    admin or a raw write could: past no seq the cache has seen."""
    seqs = set(Turn.objects.filter(experiment=experiment).values_list("seq", flat=True))
    gaps = sorted(set(range(1, max(seqs, default=0))) - seqs)
    if gaps:
        Turn.objects.create(
            experiment=experiment,
            seq=gaps[0],
            round=1,
            speaker="DM",
            kind="narrative",
            content=content or "silence",
            visibility=_stored(audience),
            tokens=3,
        )


def _append(experiment, content: str, kind: str, audience, round_number: int = 1) -> None:
    """A turn at the next seq (as `turns.turn_create` gives it: past a deleted newest
    turn's too), written with its kind, audience and round (no later update)."""
    last = Turn.objects.filter(experiment=experiment).aggregate(seq=Max("seq"))["seq"] or 0
    last = max(last, packs.newest_logged_seq(experiment.pk))
    Turn.objects.create(
        experiment=experiment,
        seq=last + 1,
        round=round_number,
        speaker="Thorin",
        kind=kind,
        content=content or "silence",
        visibility=_stored(audience),
        tokens=len(content.split()) + 1,
    )


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(script=steps)
def test_cached_postings_are_what_a_fresh_read_gives(script):
    experiment = make_experiment(roles=ROLES)
    for step in script:
        name, *args = step
        if name == "read":
            viewer, words = args
            if SearchBacklog.objects.filter(experiment=experiment).exists():
                continue  # the loader reads afresh then (no stamp)
            assert cached(experiment, viewer, words) == fresh(experiment, viewer, words)
            query = make_query(" ".join(words))
            if query:
                assert ranked(experiment, viewer, query) == ranked_afresh(experiment, viewer, query)
        elif name == "append":
            _append(experiment, *args)
        elif name == "low":
            _low_insert(experiment, *args)
        else:
            _apply(experiment, step)
    postings_cache.clear()


def test_a_second_read_with_nothing_new_reads_nothing():
    experiment = make_experiment(roles=ROLES)
    for content in ("salt lantern", "the oath", "salt gate"):
        make_turn(experiment, content=content)
    thorin = Viewer(role="Thorin")
    first = Reader(experiment, thorin)
    assert cached(experiment, thorin, ["salt", "oath"], first)["salt"]
    assert len(first.calls) == 1

    again = Reader(experiment, thorin)
    assert cached(experiment, thorin, ["salt", "oath"], again) == fresh(
        experiment, thorin, ["salt", "oath"]
    )
    assert again.calls == []


def test_after_an_append_only_the_new_matches_are_read():
    experiment = make_experiment(roles=ROLES)
    make_turn(experiment, content="salt lantern")
    last = make_turn(experiment, content="salt oath")
    thorin = Viewer(role="Thorin")
    cached(experiment, thorin, ["salt", "ember"])
    make_turn(experiment, content="salt ember")

    reader = Reader(experiment, thorin)
    found = cached(experiment, thorin, ["salt", "ember"], reader)
    assert reader.calls == [(["salt", "ember"], [last.seq, last.seq])]
    assert found == fresh(experiment, thorin, ["salt", "ember"])
    assert [row[1] for row in found["salt"]] == [3, 2, 1]


def test_a_write_to_a_turn_a_viewer_cannot_read_leaves_its_entries_alone():
    """A hidden write must not cost the viewer's next pack anything: its stamp is the
    count of the changes it may read, so its entries stay in force."""
    experiment = make_experiment(roles=ROLES)
    make_turn(experiment, content="salt lantern")
    whisper = make_turn(
        experiment, speaker="DM", kind="whisper", content="salt oath", visibility=["Cassia"]
    )
    thorin, cassia = Viewer(role="Thorin"), Viewer(role="Cassia")
    before, cassia_before = stamp(experiment, thorin).changes, stamp(experiment, cassia).changes
    cached(experiment, thorin, ["salt"])

    Turn.objects.filter(pk=whisper.pk).update(content="salt oath and ember")
    Turn.objects.filter(pk=whisper.pk).delete()

    assert stamp(experiment, thorin).changes == before
    reader = Reader(experiment, thorin)
    assert cached(experiment, thorin, ["salt"], reader) == fresh(experiment, thorin, ["salt"])
    assert reader.calls == []
    # The whisper's reader sees both writes.
    assert stamp(experiment, cassia).changes == cassia_before + 3  # old, new; then gone


def test_a_turn_appended_after_the_newest_was_deleted_is_read():
    """A deleted newest turn's seq is not given again: had it been, a turn appended
    after a hidden newest turn was deleted would sit at a seq the cache had seen, and
    its postings would be missed (the viewer's count does not move for a hidden turn)."""
    experiment = make_experiment(roles=ROLES)
    make_turn(experiment, content="salt lantern")
    hidden = make_turn(
        experiment, speaker="DM", kind="whisper", content="oath", visibility=["Cassia"]
    )
    thorin = Viewer(role="Thorin")
    cached(experiment, thorin, ["salt"])
    Turn.objects.filter(pk=hidden.pk).delete()
    added = make_turn(experiment, content="salt gate")

    assert added.seq == hidden.seq + 1
    found = cached(experiment, thorin, ["salt"])
    assert found == fresh(experiment, thorin, ["salt"])
    assert added.pk in [row[0] for row in found["salt"]]


def test_a_write_to_a_readable_turn_reads_the_word_again():
    experiment = make_experiment(roles=ROLES)
    turn = make_turn(experiment, content="salt lantern")
    kept = make_turn(experiment, content="salt oath")
    thorin = Viewer(role="Thorin")
    cached(experiment, thorin, ["salt"])

    Turn.objects.filter(pk=turn.pk).update(visibility=["Cassia"])  # now hidden from Thorin

    reader = Reader(experiment, thorin)
    found = cached(experiment, thorin, ["salt"], reader)
    assert reader.calls == [(["salt"], [search.ALL_SEQS])]
    assert [row[0] for row in found["salt"]] == [kept.pk]


def test_reads_inside_a_transaction_store_nothing():
    """What a transaction reads may be rolled back: only autocommit reads are kept."""
    experiment = make_experiment(roles=ROLES)
    make_turn(experiment, content="salt lantern")
    thorin = Viewer(role="Thorin")
    with transaction.atomic():
        make_turn(experiment, content="salt oath")
        assert len(cached(experiment, thorin, ["salt"])["salt"]) == 2
        transaction.set_rollback(True)
    reader = Reader(experiment, thorin)
    assert len(cached(experiment, thorin, ["salt"], reader)["salt"]) == 1
    assert reader.calls == [(["salt"], [search.ALL_SEQS])]


def test_packs_built_with_held_postings_are_the_packs_built_afresh():
    """End to end: after writes of every kind, each role's pack from warm postings, hit
    and window caches is the pack built with all three emptied."""
    experiment = make_experiment(roles=ROLES)
    facts = ("The salt road runs to the ember gate.", "Thorin swears the salt oath.")
    for round_number in range(1, 25):
        content = facts[round_number - 1] if round_number <= len(facts) else "Rain, and more rain."
        make_turn(experiment, round=round_number, content=content)
    note = make_turn(
        experiment, round=24, speaker="DM", kind="whisper", content="salt", visibility=["Cassia"]
    )
    question = "Where is the salt oath sworn, by the ember gate?"

    def all_packs():
        return [
            pack_for_role(experiment=experiment, role=role, input_text=question, use_cache=False)
            for role in ROLES
        ]

    all_packs()  # warm
    make_turn(experiment, round=24, content="The ember gate holds the salt.")
    Turn.objects.filter(pk=note.pk).update(content="salt oath ember")
    held_before = postings_cache.stats["words_held"] + postings_cache.stats["words_read"]
    hits_before = hit_cache.stats["hits_held"]
    windows_before = window_cache.stats["kept"]
    warm = all_packs()
    assert postings_cache.stats["words_held"] + postings_cache.stats["words_read"] > held_before
    rankings_before = postings_cache.stats["rankings_held"]
    assert all_packs() == warm  # nothing changed: every ranking is the one kept
    assert postings_cache.stats["rankings_held"] > rankings_before
    assert hit_cache.stats["hits_held"] > hits_before
    assert window_cache.stats["kept"] > windows_before
    postings_cache.clear()
    hit_cache.clear()
    window_cache.clear()
    cold = all_packs()
    assert warm == cold
    assert any(section.name == "retrieval" and section.items for section in cold[1].sections)


HIDDEN = (["Cassia"], ["DM", "Cassia"])  # audiences Thorin does not read
# Writes to turns Thorin reads neither before nor after (`write_hidden`); each cache's
# noninterference test draws from these.
HIDDEN_WRITES = (
    st.tuples(st.just("low"), texts, st.sampled_from(HIDDEN)),
    st.tuples(st.just("edit"), st.integers(0, 20), texts),
    st.tuples(st.just("audience"), st.integers(0, 20), st.sampled_from(HIDDEN)),
    st.tuples(st.just("hold"), st.integers(0, 20), st.booleans()),
    st.tuples(st.just("delete"), st.integers(0, 20)),
)
hidden_steps = st.lists(
    st.one_of(st.tuples(st.just("append"), texts, st.sampled_from(HIDDEN)), *HIDDEN_WRITES),
    min_size=1,
    max_size=12,
)


def write_hidden(experiment, step, readable: set[int]) -> None:
    """One of `HIDDEN_WRITES`: a low insert of a hidden turn, or a write to a turn not in
    ``readable`` (picked by the step's index among them)."""
    name, *args = step
    if name == "low":
        _low_insert(experiment, *args)
        return
    hidden = Turn.objects.filter(experiment=experiment).exclude(pk__in=readable)
    turns = list(hidden.order_by("seq"))
    if turns:
        _apply_to(turns[args[0] % len(turns)], name, args[1:])


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(script=hidden_steps)
def test_writes_a_viewer_cannot_read_never_make_it_read_its_postings_again(script):
    """Noninterference for the cache: whatever is written to turns Thorin reads neither
    before nor after, his stamp stays and his next read of held words reads nothing — the
    same work, so the same time, as if nothing had been written."""
    experiment = make_experiment(roles=ROLES)
    for content in ("salt lantern oath", "ember gate", "the running salt"):
        make_turn(experiment, content=content)
    thorin = Viewer(role="Thorin")
    words = ["salt", "lantern", "ember", "oath", "gate"]
    cached(experiment, thorin, words)
    before = stamp(experiment, thorin)
    readable = set(Turn.objects.filter(experiment=experiment).values_list("pk", flat=True))
    for step in script:
        if step[0] == "append":
            _append(experiment, step[1], "whisper", step[2])
        else:
            write_hidden(experiment, step, readable)
    after = stamp(experiment, thorin)
    assert after.changes == before.changes
    reader = Reader(experiment, thorin)
    assert cached(experiment, thorin, words, reader) == fresh(experiment, thorin, words)
    # Only the newest seq may have moved (hidden appends): then one read past it.
    assert reader.calls in ([], [(words, [before.last_seq] * len(words))])
    assert bool(reader.calls) == (after.last_seq > before.last_seq)


def _apply_to(turn: Turn, name: str, args) -> None:
    from django.utils import timezone

    rows = Turn.objects.filter(pk=turn.pk)
    if name == "edit":
        rows.update(content=args[0] or "silence")
    elif name == "audience":
        rows.update(visibility=args[0])
    elif name == "hold":
        rows.update(held_at=timezone.now() if args[0] else None)
    elif name == "delete":
        rows.delete()


def _logged(experiment) -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM campaigns_turn_changes WHERE experiment_id = %s",
            [experiment.pk],
        )
        return cursor.fetchone()[0]


def test_an_import_and_its_indexing_log_no_change_and_a_deletion_leaves_none():
    """An import's turns are appends, and the indexing task only gives them their term
    rows: neither may log a change (each viewer's count reads the log), and a deleted
    campaign takes its log with it."""
    from campaigns.services import transcripts
    from campaigns.services.transcripts import indexing
    from tests.campaigns.test_search_after_import import _transcript

    experiment = transcripts.import_transcript(data=_transcript(rounds=40))
    indexing.index_imported_turns(experiment_id=experiment.pk)
    assert not SearchBacklog.objects.filter(experiment=experiment).exists()
    assert _logged(experiment) == 0

    Turn.objects.filter(experiment=experiment, seq=2).update(content="The kestrel sleeps.")
    assert _logged(experiment) == 2  # the edited turn's old and new version
    experiment.delete()
    assert _logged(experiment) == 0


def test_the_change_log_triggers_exist_after_every_migration():
    """SQLite drops a table's triggers when a migration rebuilds the table: a later
    migration of the turns or the experiments must re-create these (0039's)."""
    import importlib

    from django.db import connection

    changes = importlib.import_module("campaigns.migrations.0039_turn_changes")
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'")
            found = dict(cursor.fetchall())
            for name in changes.SQLITE_TRIGGER_NAMES:
                assert name in found
            for name in ("turn_terms_insert", "turn_terms_update", "turn_terms_delete"):
                assert "campaigns_turn_changes" in found[name]
        else:
            cursor.execute("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal")
            found = {row[0] for row in cursor.fetchall()}
            assert {"turn_terms_insert", "turn_changes_experiment_delete"} <= found
            cursor.execute("SELECT prosrc FROM pg_proc WHERE proname = 'babel_turn_terms_sync'")
            assert "campaigns_turn_changes" in cursor.fetchone()[0]
