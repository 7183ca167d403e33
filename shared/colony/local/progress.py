"""Progress output for long local work: a redrawn bar on a terminal, plain lines otherwise."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from colony.errors import ConfigError


class Progress:
    def __init__(self, label: str, total: int, stream: TextIO | None = None) -> None:
        self.label, self.total, self.done = label, total, 0
        self.stream = stream or sys.stderr
        self.started = time.perf_counter()
        self._tty = self.stream.isatty()
        self._last_line = -1

    def advance(self, note: str = "") -> None:
        self.done += 1
        width = 24
        filled = int(width * self.done / max(self.total, 1))
        line = (
            f"  {self.label:<22} [{'#' * filled}{'.' * (width - filled)}]"
            f" {self.done}/{self.total} {note}"
        )
        if self._tty:
            self.stream.write("\r\033[K" + line[:110])
            if self.done == self.total:
                self.stream.write("\n")
        elif self.done == self.total or self.done * 4 // max(self.total, 1) != self._last_line:
            self._last_line = self.done * 4 // max(self.total, 1)
            self.stream.write(line + "\n")
        self.stream.flush()

    def elapsed(self) -> float:
        return time.perf_counter() - self.started


def wait_until(
    what: str,
    probe: Callable[[], Any],
    timeout: float = 120.0,
    *,
    alive: Callable[[], object] | None = None,
) -> Any:
    """Poll ``probe`` until it returns something truthy (returned), for the demo's display of
    what the running functions did; past ``timeout`` seconds a ``ConfigError`` names ``what``.

    ``alive`` (``FunctionServers.check``) is called before each look and raises once what
    would do the work has died, so that is reported at once rather than at the timeout.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if alive is not None:
            alive()
        value = probe()
        if value:
            return value
        time.sleep(0.2)  # polling the functions' visible effects, bounded by the deadline
    raise ConfigError(f"the demo timed out after {timeout:.0f}s waiting for {what}")
