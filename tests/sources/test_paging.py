"""The one pager of the trace sources: every item, in order; a looping or endless server is refused."""

import pytest

from replaygate.sources import SourceError
from replaygate.sources._paging import cursor_pages


def test_pages_are_followed_to_the_end() -> None:
    pages = {None: ([1, 2], "b"), "b": ([3], "c"), "c": ([], "d"), "d": ([4], None)}
    asked: list[str | None] = []

    def fetch(cursor: str | None) -> tuple[list[int], str | None]:
        asked.append(cursor)
        return pages[cursor]

    assert list(cursor_pages(fetch, "test")) == [1, 2, 3, 4]
    assert asked == [None, "b", "c", "d"]


def test_an_empty_cursor_ends_the_listing() -> None:
    assert list(cursor_pages(lambda cursor: ([cursor or "first"], ""), "test")) == ["first"]


def test_a_cursor_seen_before_is_a_loop() -> None:
    pages = {None: ([1], "a"), "a": ([2], "b"), "b": ([3], "a")}
    with pytest.raises(SourceError, match="Phoenix x \\(spans\\): the server sent the same page cursor"):
        list(cursor_pages(lambda cursor: pages[cursor], "Phoenix x (spans)"))


def test_too_many_pages_are_refused() -> None:
    items = cursor_pages(lambda cursor: ([int(cursor or 0)], str(int(cursor or 0) + 1)), "test", max_pages=5)
    with pytest.raises(SourceError, match="more than 5 pages"):
        list(items)
    assert list(
        cursor_pages(lambda c: ([c], None if c == "4" else str(int(c or 0) + 1)), "t", max_pages=5)
    ) == [
        None,
        "1",
        "2",
        "3",
        "4",
    ]
