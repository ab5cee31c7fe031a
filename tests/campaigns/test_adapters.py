"""Row views (`campaigns.reads.adapters`): a row read again gives the view built for it,
an edited row or another set of DM roles a new one."""

from __future__ import annotations

from campaigns.reads import adapters


def _row(content: str = "The gate holds.", visibility: str | None = '["Wren"]') -> tuple:
    return (41, 7, 2, "DM", "narrative", content, visibility, '["omen"]', False, 4)


def test_a_row_read_again_gives_the_same_view():
    # A new tuple of new strings, as every read gives: equal, not the same object.
    first = adapters.turn_view_row(_row(), ("DM",))
    again = adapters.turn_view_row(tuple(list(_row())), ("DM",))
    assert again is first
    assert (again.content, again.tags) == ("The gate holds.", ("omen",))


def test_an_edited_row_or_other_dm_roles_build_a_new_view():
    shown = adapters.turn_view_row(_row(), ("DM",))
    edited = adapters.turn_view_row(_row("The gate falls."), ("DM",))
    assert edited.content == "The gate falls."
    moved = adapters.turn_view_row(_row("The gate falls.", '["Cassia"]'), ("DM",))
    assert moved.visibility != edited.visibility
    # A corrupt audience is read as the DM roles': another set of them, another view.
    corrupt = adapters.turn_view_row(_row("The gate falls.", "[]"), ("DM",))
    other_dm = adapters.turn_view_row(_row("The gate falls.", "[]"), ("GM",))
    assert (corrupt.visibility, other_dm.visibility) == (("DM",), ("GM",))
    assert adapters.turn_view_row(_row(), ("DM",)) == shown


def test_the_memo_is_bounded(monkeypatch):
    monkeypatch.setattr(adapters, "ROW_VIEWS_CACHED", 3)
    adapters.lore_view_row.cache_clear()
    rows = [
        (i, f"term {i}", "place", "A place.", None, "approved", "dm", False, 1, 1, 1, None, None)
        for i in range(10)
    ]
    views = [adapters.lore_view_row(row) for row in rows]
    assert [view.id for view in views] == list(range(10))
    assert adapters.lore_view_row(rows[9]) is views[9]
    assert adapters.lore_view_row(rows[0]) is not views[0]
    assert adapters.lore_view_row(rows[0]) == views[0]
