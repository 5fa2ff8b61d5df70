"""A URL with its password hidden, for messages: ``postgresql+psycopg://rg:***@db/replaygate``.

The same form as the control plane's ``replaygate.store.display_url`` (SQLAlchemy's
``render_as_string(hide_password=True)``), without importing SQLAlchemy: the instrumentation stays light.
"""

from __future__ import annotations

import re

__all__ = ["masked_url"]

# scheme://user:password@rest, the password running to the first "@" (as SQLAlchemy parses it)
_PASSWORD = re.compile(r"^(?P<head>[A-Za-z][\w+.-]*://[^:/@]*):[^@]*@")


def masked_url(url: str) -> str:
    """``url`` with its password (if any) replaced by ``***``; anything that is not a URL as given."""
    return _PASSWORD.sub(r"\g<head>:***@", url, count=1)
