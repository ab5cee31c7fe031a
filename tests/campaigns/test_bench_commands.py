"""`manage.py bench`, `bench_import` and `bench_models` run end to end and print what they promise.

No timing is asserted (timings go in the benchmark's output, not in tests); these check
that the table is complete and that nothing a benchmark creates is kept.
"""

from __future__ import annotations

import shutil
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from campaigns.models import Experiment, Turn

pytestmark = pytest.mark.django_db


def test_bench_prints_one_row_per_benchmark_against_its_floor_and_keeps_nothing():
    out = StringIO()
    call_command("bench", sizes=[16, 40], repeats=1, import_turns=30, stdout=out, stderr=StringIO())
    text = out.getvalue()
    for row in ("pack build", "pack, new turn", "pack cache hit", "import"):
        assert row in text
    assert "raw indexed fetch" in text and "raw tiktoken" in text
    assert text.count("40 vs 16") == 2  # the rebuilt pack's ratio and the new-turn pack's
    assert Experiment.objects.count() == 0 and Turn.objects.count() == 0


def test_bench_measures_packs_in_passes_and_shows_each_passs_median():
    out = StringIO()
    call_command(
        "bench", sizes=[16, 40], repeats=1, passes=2, import_turns=30, stdout=out,
        stderr=StringIO(),
    )  # fmt: skip
    lines = out.getvalue().splitlines()
    assert "medians over 2 passes (sizes taking turns role by role) of 1 packs per role" in lines[0]
    assert lines[1].split()[-1] == "passes"
    pack_rows = [line for line in lines if line.startswith(("pack build", "pack, new turn"))]
    assert len(pack_rows) == 6
    for line in pack_rows:  # lowest–highest of the two passes, ratios too
        low, high = line.split()[-1].replace("×", "").split("–")
        assert float(low) <= float(high)
    import_row = next(line for line in lines if line.startswith("import "))
    assert import_row.split()[-1] == "-"  # one measurement, no passes


def test_bench_sizes_take_turns_role_by_role_so_a_slow_spell_falls_on_both(monkeypatch):
    from campaigns import bench as synthetic
    from campaigns.management.commands import bench

    measured = []

    def recording(name, real):
        def measure(experiment, role, repeats, **options):
            measured.append((name, experiment.pk, role))
            return real(experiment, role, repeats, **options)

        return measure

    monkeypatch.setattr(bench, "build_samples", recording("build", bench.build_samples))
    monkeypatch.setattr(bench, "new_turn_samples", recording("fresh", bench.new_turn_samples))
    call_command(
        "bench", sizes=[16, 40], repeats=1, passes=2, import_turns=30, stdout=StringIO(),
        stderr=StringIO(),
    )  # fmt: skip
    roles = len(synthetic.ROLES)
    per_pass = 4 * roles  # each role rebuilt, then after a new turn, at both sizes
    assert len(measured) == 2 * per_pass
    larger = max(pk for _, pk, _ in measured)  # created second (sizes=[16, 40])
    measured = [(name, pk == larger, role) for name, pk, role in measured]
    for number in range(2):
        done = measured[number * per_pass : (number + 1) * per_pass]
        assert [name for name, _, _ in done] == ["build"] * 2 * roles + ["fresh"] * 2 * roles
        for turn in range(2 * roles):  # each role at both sizes, back to back
            (_, first, role), (_, second, other) = done[2 * turn : 2 * turn + 2]
            assert role == other and first != second
            # the larger campaign goes first every other role, and the next pass flips it
            assert first == ((number + turn % roles) % 2 == 1)


@pytest.mark.parametrize(
    "options, named",
    [({"passes": 0}, "--passes"), ({"repeats": 0}, "--repeats"), ({"sizes": [40, 40]}, "--sizes")],
)
def test_bench_refuses_passes_repeats_or_sizes_it_cannot_measure(options, named):
    with pytest.raises(CommandError, match=named):
        call_command("bench", **{"sizes": [16, 40], **options}, stdout=StringIO())
    assert Experiment.objects.count() == 0


def test_bench_import_reports_throughput_against_tiktoken_and_keeps_nothing():
    out = StringIO()
    call_command("bench_import", turns=30, repeats=1, stdout=out)
    assert "30 turns" in out.getvalue()
    assert "of raw tiktoken" in out.getvalue()
    assert Experiment.objects.count() == 0


def test_bench_import_times_search_indexing_on_its_own_line():
    """The background indexing task (after the import's commit) is timed apart from it."""
    out = StringIO()
    call_command("bench_import", turns=30, repeats=1, stdout=out)
    line = next(x for x in out.getvalue().splitlines() if x.startswith("search indexing"))
    assert line.startswith("search indexing (background task after commit, not in import): ")
    assert line.endswith(" s")


def test_bench_retrieval_prints_a_row_per_size_and_keeps_nothing():
    from campaigns.models import RetrievalPin

    out = StringIO()
    call_command("bench_retrieval", sizes=[40], repeats=1, stdout=out)
    lines = out.getvalue().splitlines()
    assert "search ms" in lines[1] and "round+tool ms" in lines[1]
    row = lines[-1].split()
    assert row[0] == "40" and len(row) == 10
    assert Experiment.objects.count() == 0 and RetrievalPin.objects.count() == 0


def test_bench_models_plays_the_demo_on_a_model_and_keeps_nothing(openai_standin, settings):
    settings.OPENAI_BASE_URL = openai_standin.base_url
    out = StringIO()
    call_command("bench_models", "openai:standin", "--rounds", "1", "--window", "8192", stdout=out)
    text = out.getvalue()
    assert "window: 8192 tokens (declared" in text
    assert "rounds succeeded: 1 of 1" in text
    assert "of window" in text and "median latency" in text
    assert len(openai_standin.calls) >= 4, "every agent asked the stand-in"
    assert not Experiment.objects.exists(), "rolled back"


def test_bench_models_refuses_a_model_id_it_cannot_use():
    with pytest.raises(CommandError, match="model"):
        call_command("bench_models", "smollm2")


def test_bench_context_builds_packs_among_other_campaigns_and_keeps_nothing():
    out, err = StringIO(), StringIO()
    call_command("bench_context", sizes=[16], repeats=1, other_campaigns=2, stdout=out, stderr=err)
    assert "2 other campaigns of each size" in out.getvalue()
    assert "built 48 turns" in err.getvalue()
    assert "     16 all" in out.getvalue()
    assert Experiment.objects.count() == 0 and Turn.objects.count() == 0


def test_bench_context_times_packs_after_a_new_turn_and_keeps_nothing():
    out = StringIO()
    call_command("bench_context", sizes=[16, 24], repeats=2, stdout=out, stderr=StringIO())
    text = out.getvalue()
    assert "new-turn ms" in text.splitlines()[1]
    rows = [line.split() for line in text.splitlines() if line.startswith("     24 ")]
    assert len(rows) == 6  # five roles and all
    assert all(float(row[4]) > 0 for row in rows)  # each has its new-turn median
    assert "median at 24 turns, after a new turn:" in text
    assert Experiment.objects.count() == 0 and Turn.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_bench_context_can_time_committed_campaigns_and_deletes_them():
    out = StringIO()
    call_command(
        "bench_context", sizes=[16], repeats=1, committed=True, stdout=out, stderr=StringIO()
    )
    assert "campaigns committed" in out.getvalue()
    assert "     16 all" in out.getvalue()
    assert Experiment.objects.count() == 0 and Turn.objects.count() == 0


def test_bench_context_refuses_a_negative_number_of_other_campaigns():
    with pytest.raises(CommandError, match="--other-campaigns"):
        call_command("bench_context", sizes=[16], other_campaigns=-1, stdout=StringIO())


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(
    not (shutil.which("valgrind") and shutil.which("callgrind_control")),
    reason="valgrind is not installed (apt-get install valgrind)",
)
def test_bench_instructions_counts_each_kind_of_pack_under_callgrind_and_keeps_nothing():
    """Children under callgrind count the packs on a copy of the database (a file copy
    on SQLite, a template on PostgreSQL), which is dropped with the campaigns."""
    out = StringIO()
    call_command("bench_instructions", sizes=[8, 16], packs=1, stdout=out, stderr=StringIO())
    lines = out.getvalue().splitlines()
    assert "instructions a pack executes in this process (callgrind)" in lines[0]
    rows = {line.split()[0]: line.split() for line in lines[3:]}
    assert set(rows) == {"rebuilt", "new"}
    for row in rows.values():
        few, many = (float(cell.rstrip("M")) for cell in row if cell.endswith("M"))
        assert few > 0.5 and many > 0.5  # millions of instructions: a pack was built
        assert abs(float(row[-1].rstrip("×")) - many / few) < 0.02  # the ratio of the two
    assert Experiment.objects.count() == 0 and Turn.objects.count() == 0
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_database WHERE datname LIKE %s", ["%_instructions_%"]
            )
            assert cursor.fetchone()[0] == 0


@pytest.mark.parametrize(
    ("options", "named"),
    [({"packs": 0}, "--packs"), ({"sizes": [8, 8]}, "--sizes"), ({"sizes": [4, 16]}, "--sizes")],
)
def test_bench_instructions_refuses_what_it_cannot_count(options, named):
    with pytest.raises(CommandError, match=named):
        call_command("bench_instructions", stdout=StringIO(), stderr=StringIO(), **options)


def test_bench_instructions_names_the_missing_package(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda tool: None)
    with pytest.raises(CommandError, match="valgrind package"):
        call_command("bench_instructions", stdout=StringIO(), stderr=StringIO())
    assert Experiment.objects.count() == 0
