"""Fault injection for crash-and-redeliver tests (``COLONY_INJECT_FAULTS``).

``COLONY_INJECT_FAULTS="qualification.after_step,message.after_step"`` makes each named
point fail ONCE per key (e.g. per event id) in this process: the handler raises, the
transport redelivers, and the second delivery passes. Empty in production.
"""

from __future__ import annotations

import os
import threading

from colony.errors import UpstreamError


class InjectedFault(UpstreamError):
    code = "injected_fault"


class Faults:
    def __init__(self, points: frozenset[str] = frozenset()) -> None:
        self.points = points
        self._hit: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    @classmethod
    def from_env(cls) -> Faults:
        raw = os.environ.get("COLONY_INJECT_FAULTS", "")
        return cls(frozenset(p.strip() for p in raw.split(",") if p.strip()))

    def check(self, point: str, key: str) -> None:
        if point not in self.points:
            return
        with self._lock:
            if (point, key) in self._hit:
                return
            self._hit.add((point, key))
        raise InjectedFault(f"injected fault at {point} for {key}")
