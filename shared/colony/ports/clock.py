"""The clock flows read (``deps.clock()``): now, timezone-aware.

``colony.runtime.deps.utc_now`` in production; tests pass a fixed one
(``colony.testing.inline.fixed_clock``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

Clock = Callable[[], datetime]
