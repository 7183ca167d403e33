"""A deployed function's start-up, with the cycle collector held back (issue 32 item 4).

An instance starts twice over: functions-framework imports ``main.py``, then the first
request imports its flows and builds its clients. Both allocate objects by the hundred
thousand (modules' functions and classes, pydantic's schemas and validators, compiled
patterns), and nearly all of them live as long as the instance. Python's default thresholds
run a collection every 700 new objects, and the older generations' every tenth of those, so
the collector walks that growing heap again and again while it is being built and frees next
to nothing: in ``bench/cold_start.py`` that was about 45 ms of a model function's 290 ms
first request, and 1.5 ms of hello-world's start.

So, in a deployed function only (Cloud Run sets ``K_REVISION`` on every instance of a
revision; the test harnesses and the local function servers do not, and keep Python's
defaults):

- ``begin``, run when the ``colony`` package is first imported, lets the youngest generation
  grow to ``START_UP_THRESHOLD`` objects before it is collected. A start-up that allocates
  more than that is still collected, so memory stays bounded whatever the first request does.
- ``settled``, called by the edge when the first invocation returns, freezes what start-up
  made (``gc.freeze``: later collections leave it out, so they walk only what requests
  allocate) and puts the default thresholds back.

The price: a reference cycle that became garbage during start-up and was not collected yet is
frozen with the rest and never freed. Reference counting still frees everything else, and the
amount is bounded and paid once per instance.
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Mapping

START_UP_THRESHOLD = 100_000  # objects; a model function's start-up allocates about 90,000

_lock = threading.Lock()
_restore: tuple[int, int, int] | None = None  # the thresholds start-up replaced, while it runs


def deployed(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether this process is an instance of a deployed function (Cloud Run names its
    revision in ``K_REVISION``)."""
    return bool(environ.get("K_REVISION", "").strip())


def begin(environ: Mapping[str, str] = os.environ) -> bool:
    """Start the start-up window if this is a deployed function; True if it is open now."""
    global _restore
    if not deployed(environ):
        return False
    with _lock:
        if _restore is None:
            _restore = gc.get_threshold()
            gc.set_threshold(START_UP_THRESHOLD, *_restore[1:])
        return True


def settled() -> None:
    """End start-up (once; later calls do nothing): freeze what it allocated and restore the
    collector's thresholds."""
    global _restore
    if _restore is None:  # the common case: start-up is over, or never began (not deployed)
        return
    with _lock:
        if _restore is None:
            return
        gc.freeze()
        gc.set_threshold(*_restore)
        _restore = None
