"""What the benchmark's web does to a request (``Realism``, issue 33's figures by default):
a latency, sometimes a 5xx or a slow answer, and robots.txt refusing us on some sites.

Every draw is a function of the seed and what it is about (host, target, and how many times
that target was asked before), never of arrival order across hosts: a run that asks the same
things of each URL in the same order meets the same web, however its fetches interleave.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Realism:
    latency: tuple[float, float] = (0.05, 0.8)  # seconds before every answer
    error_rate: float = 0.03  # a 500, 502 or 503 instead of the page
    slow_rate: float = 0.05
    slow: tuple[float, float] = (3.0, 8.0)  # added to a slow page's latency
    robots_refusal_rate: float = 0.02  # of generated company sites


@dataclass(frozen=True, slots=True)
class Fate:
    delay: float  # seconds before the answer starts
    error: int | None  # a 5xx instead of the page (never for robots.txt)
    slow: bool


CALM = Fate(0.0, None, False)


def draw(seed: int, *key: object) -> random.Random:
    """A generator for ``key`` alone (a string seed: the same on every run and platform)."""
    return random.Random(":".join(map(str, (seed, *key))))


def fate(realism: Realism | None, seed: int, host: str, target: str, attempt: int) -> Fate:
    """What happens to the ``attempt``-th request (from 0) for ``target`` on ``host``."""
    if realism is None:
        return CALM
    rng = draw(seed, host, target, attempt)
    delay = rng.uniform(*realism.latency)
    slow = rng.random() < realism.slow_rate
    failing = rng.random() < realism.error_rate and not target.startswith("/robots.txt")
    error = rng.choice((500, 502, 503)) if failing else None
    return Fate(delay + (rng.uniform(*realism.slow) if slow else 0.0), error, slow)


def refuses_robots(realism: Realism | None, seed: int, host: str) -> bool:
    """Whether ``host``'s robots.txt refuses us everything (generated sites only)."""
    chance = draw(seed, "robots", host).random()
    return realism is not None and chance < realism.robots_refusal_rate
