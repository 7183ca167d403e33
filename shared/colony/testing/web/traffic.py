"""What reached the stand-in web: every request (``WebRequest``) and the counters the
benchmark reads (``WebCounters``), kept by ``Traffic``, which handler threads update.

A *refused address* is a request a correct fetcher never sends: an IP literal as ``Host``
(``127.0.0.1:<port>``, ``169.254.169.254``, or one in disguise such as ``2130706433``) or a
hostname the server was told is forbidden. A *robots violation* is a request for a path the
host's own robots.txt disallows for ``ColonyResearch``, whatever User-Agent it came with.
"""

from __future__ import annotations

import ipaddress
import itertools
import re
import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

_NUMERIC_HOST = re.compile(r"[0-9.]+|0x[0-9a-f.x]+")  # 2130706433, 0x7f.1: IPs in disguise


def host_of(value: str) -> str:
    """``Host``'s hostname: lower-cased, no port, no trailing dot, IPv6 without brackets."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")]
    return (value.rsplit(":", 1)[0] if value.count(":") == 1 else value).rstrip(".")


def is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return bool(_NUMERIC_HOST.fullmatch(host))
    return True


@dataclass(slots=True)
class WebRequest:
    """One request as it arrived; ``status`` and ``bytes_sent`` once it was answered."""

    method: str
    host: str  # from ``Host`` (or an absolute target), as ``host_of`` reads it
    target: str  # path and query
    headers: Mapping[str, str]  # names lower-cased
    refused_address: bool
    unknown_host: bool
    robots_violation: bool
    at: float = 0.0  # time.monotonic() at arrival, stamped by ``Traffic.arrive``
    status: int | None = None
    bytes_sent: int = 0

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


@dataclass(frozen=True, slots=True)
class WebCounters:
    requests: int
    per_host: dict[str, int]
    robots_violations: int
    refused_address: int
    unknown_host: int
    not_modified: int
    server_errors: int
    bytes_sent: int
    max_in_flight: dict[str, int]  # per host, the most requests it was answering at once
    shortest_gap: dict[str, float] = field(default_factory=dict)  # seconds; hosts asked twice+


class Traffic:
    """The record, safe to update from many handler threads."""

    def __init__(self) -> None:
        self._idle = threading.Condition()
        self._requests: list[WebRequest] = []
        self._asked: Counter[tuple[str, str]] = Counter()
        self._in_flight: Counter[str] = Counter()
        self._peak: Counter[str] = Counter()

    def arrive(self, request: WebRequest) -> int:
        """Record ``request`` (stamping its arrival) as in flight; how many times its target
        was asked before."""
        with self._idle:
            request.at = time.monotonic()  # under the lock: arrivals are recorded in order
            self._requests.append(request)
            attempt = self._asked[(request.host, request.target)]
            self._asked[(request.host, request.target)] += 1
            self._in_flight[request.host] += 1
            self._peak[request.host] = max(self._peak[request.host], self._in_flight[request.host])
            return attempt

    def leave(self, request: WebRequest, status: int, sent: int) -> None:
        with self._idle:
            request.status, request.bytes_sent = status, sent
            self._in_flight[request.host] -= 1
            self._idle.notify_all()

    @property
    def requests(self) -> list[WebRequest]:
        with self._idle:
            return list(self._requests)

    def wait_idle(self, timeout: float) -> bool:
        with self._idle:
            return self._idle.wait_for(lambda: not any(self._in_flight.values()), timeout)

    def reset(self) -> None:
        with self._idle:
            self._requests.clear()
            self._asked.clear()
            self._peak = Counter(self._in_flight)

    def counters(self) -> WebCounters:
        with self._idle:
            requests, peaks = list(self._requests), dict(self._peak)
        arrivals: dict[str, list[float]] = {}
        for request in requests:
            arrivals.setdefault(request.host, []).append(request.at)
        return WebCounters(
            requests=len(requests),
            per_host={host: len(times) for host, times in arrivals.items()},
            robots_violations=sum(r.robots_violation for r in requests),
            refused_address=sum(r.refused_address for r in requests),
            unknown_host=sum(r.unknown_host for r in requests),
            not_modified=sum(r.status == 304 for r in requests),
            server_errors=sum((r.status or 0) >= 500 for r in requests),
            bytes_sent=sum(r.bytes_sent for r in requests),
            max_in_flight=peaks,
            shortest_gap={
                host: min(b - a for a, b in itertools.pairwise(times))
                for host, times in arrivals.items()
                if len(times) > 1
            },
        )
