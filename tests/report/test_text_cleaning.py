"""Issue 19: the reports' text cleaning by one regex gives what it gave before.

JUnit drops what XML 1.0 cannot carry (one regex, the same as the per-character filter); the HTML report
escapes with ``html.escape`` only the text that has something to escape (the same text either way).
"""

from __future__ import annotations

from html import escape

from hypothesis import given, settings
from hypothesis import strategies as st

from replaygate.report._html import _e
from replaygate.report._junit import _clean


def _reference(text: str) -> str:
    return "".join(ch for ch in text if ch in "\t\n\r" or ord(ch) >= 0x20)


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(min_codepoint=0, max_codepoint=0x3000, exclude_categories=("Cs",))))
def test_clean_equals_the_per_character_filter(text: str) -> None:
    assert _clean(text) == _reference(text)


def test_every_control_character_but_tab_and_newlines_is_dropped() -> None:
    every = "".join(map(chr, range(0x100)))
    assert _clean(every) == "\t\n\r" + "".join(map(chr, range(0x20, 0x100)))


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from("ab&<>\"'é ;")) | st.text())
def test_html_escape_fast_path_equals_html_escape(text: str) -> None:
    assert _e(text) == escape(text, quote=True)
