"""replaygate.instrumentation: what a production agent installs.

(The user's manual is written by the instrumentation issue.)
"""

from replaygate.instrumentation._errors import InstrumentationError, ReplaygateError, StoreError
from replaygate.instrumentation.version import __version__

__all__ = ["InstrumentationError", "ReplaygateError", "StoreError", "__version__"]
