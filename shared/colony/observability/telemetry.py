"""Telemetry flushed before an invocation returns.

Cloud Functions (gen2) may throttle an instance's CPU as soon as the response is sent, so
spans and error events still queued in a background exporter may leave much later or never.
Exporters register a flush here when they start (``LangfuseTracer`` when it is built, Sentry
in ``init_sentry``) and unregister when they shut down; the edge calls ``flush_telemetry``
once per invocation, which gives them all one shared time bound.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from colony.observability.logs import error_name

logger = logging.getLogger("colony.observability")

FLUSH_SECONDS = 2.0  # the whole flush of one invocation, every exporter together

Flush = Callable[[float], None]  # sends what is queued, giving up after that many seconds

_flushes: list[Flush] = []
_lock = threading.Lock()


def register_flush(flush: Flush) -> None:
    """Have ``flush_telemetry`` call ``flush`` (once, however often it is registered)."""
    with _lock:
        if flush not in _flushes:
            _flushes.append(flush)


def unregister_flush(flush: Flush) -> None:
    with _lock:
        if flush in _flushes:
            _flushes.remove(flush)


def flush_telemetry(timeout: float = FLUSH_SECONDS) -> None:
    """Flush every registered exporter, giving them ``timeout`` seconds in all.

    A failing exporter is logged (by type) and skipped: telemetry never fails a request.
    """
    with _lock:
        flushes = list(_flushes)
    deadline = time.monotonic() + timeout
    for flush in flushes:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            logger.warning("telemetry flush ran out of its %.1fs", timeout)
            return
        try:
            flush(remaining)
        except Exception as error:
            logger.warning("telemetry flush failed: %s", error_name(error))
