"""``cursor_pages``: the one pager of the trace sources (Phoenix and Langfuse page by an opaque cursor).

A page is fetched with the cursor of the previous one (None first); the items of each page are yielded
as they come, and paging stops when a page names no next cursor. A server that pages forever is refused
with a :class:`SourceError` naming the source: a cursor seen before (a loop), or more than ``max_pages``
pages in one listing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from replaygate.sources._errors import SourceError

__all__ = ["MAX_PAGES", "cursor_pages"]

#: The most pages one listing reads (at 100 to 1,000 items a page, far past every scan limit).
MAX_PAGES = 10_000

T = TypeVar("T")


def cursor_pages(
    fetch: Callable[[str | None], tuple[Iterable[T], str | None]],
    what: str,
    *,
    max_pages: int = MAX_PAGES,
) -> Iterator[T]:
    """Yield every item of a cursor-paged listing; ``fetch(cursor)`` returns ``(items, next cursor)``.

    Raises:
        SourceError: the server sent a cursor it had sent before, or more than ``max_pages`` pages.
    """
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(max_pages):
        items, cursor = fetch(cursor)
        yield from items
        if not cursor:
            return
        if cursor in seen:
            raise SourceError(f"{what}: the server sent the same page cursor twice (it pages in a loop)")
        seen.add(cursor)
    raise SourceError(f"{what}: more than {max_pages} pages in one listing; narrow the time window")
