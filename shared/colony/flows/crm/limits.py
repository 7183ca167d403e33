"""HubSpot's limits, kept by us before HubSpot has to: every HTTP request the adapter makes
for an org (the sync's reads, write-back's read and PATCH, an engagement's create) first
takes a slot in its portal's shared count (``colony.store.crm.limits``: PostgreSQL, so every
instance sees the same count; the adapter takes it through ``RequestBudget``), and a request
that finds no slot is not made: it raises ``ProviderUnavailable`` with the wait, so a durable
task is rescheduled instead of sleeping.

HubSpot's limit for a public app is per portal (110 requests per rolling 10 seconds, and a
daily count); a portal is one org's (``resource_claims``), so one org's backfill never eats
another org's share: each org spends its own portal's budget. We keep ``BURST`` of the 110
(the rest is headroom for the token refreshes and the adapter's own bounded retries). Within
an instance, orgs take turns through the queue: a backfill runs ``PAGES_PER_RUN`` pages and
queues its continuation behind the other orgs' tasks.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from colony.errors import ProviderUnavailable
from colony.store import Database
from colony.store.crm import limits

BURST = 100  # of HubSpot's 110 per rolling window
WINDOW = 10  # seconds
DAILY = 250_000
DEFAULT_WAIT = 10.0  # seconds, when HubSpot asks us to wait without saying how long


def limit_wait(limited: ProviderUnavailable) -> float:
    """How long a task waits for HubSpot's limit: its word, else ``DEFAULT_WAIT``; >= 1 s."""
    told = limited.retry_after
    return max(1.0, float(told if told is not None else DEFAULT_WAIT))


class SharedLimit:
    """One portal's slot-taker over the shared count (a ``colony.ports.RequestBudget``)."""

    def __init__(
        self,
        db: Database,
        account_id: str,
        *,
        provider: str = "hubspot",
        burst: int = BURST,
        window: int = WINDOW,
        daily: int = DAILY,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._db, self._account, self._provider = db, account_id, provider
        self._burst, self._window, self._daily, self._clock = burst, window, daily, clock
        self.taken = 0

    def take(self, calls: int = 1) -> None:
        with self._db.transaction(None) as cur:
            wait = limits.take(
                cur,
                self._provider,
                self._account,
                self._clock(),
                burst=self._burst,
                window=self._window,
                daily=self._daily,
                calls=calls,
            )
        if wait is not None:
            raise ProviderUnavailable(
                "HubSpot's limit for this portal is reached (shared by every instance)",
                retry_after=wait,
                reason="shared_limit",
            )
        self.taken += calls

    def spend(self, calls: int = 1) -> None:
        with self._db.transaction(None) as cur:
            limits.spend(cur, self._provider, self._account, self._clock(), calls=calls)
        self.taken += calls
