"""HubSpot's limits, kept by us before HubSpot has to: every call of an org's client first
takes a slot in its portal's shared count (``colony.store.crm.limits``: PostgreSQL, so every
instance sees the same count), and a call that finds no slot is not made: it raises
``ProviderUnavailable`` with the wait, so a durable task is rescheduled instead of sleeping.

HubSpot's limit for a public app is per portal (110 requests per rolling 10 seconds, and a
daily count); a portal is one org's (``resource_claims``), so one org's backfill never eats
another org's share: each org spends its own portal's budget. We keep ``BURST`` of the 110
(the rest is headroom for the token refreshes and the adapter's own bounded retries). Within
an instance, orgs take turns through the queue: a backfill runs ``PAGES_PER_RUN`` pages and
queues its continuation behind the other orgs' tasks.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import ParamSpec, TypeVar

from colony.errors import ProviderUnavailable
from colony.ports import (
    CrmClient,
    CrmObjectType,
    CrmRecord,
    Engagement,
    EngagementRef,
    FieldChange,
    FieldVersion,
    Pipeline,
    RateLimit,
    RecordPage,
    SearchQuery,
)
from colony.store import Database
from colony.store.crm import limits

P = ParamSpec("P")
T = TypeVar("T")
BURST = 100  # of HubSpot's 110 per rolling window
WINDOW = 10  # seconds
DAILY = 250_000


class SharedLimit:
    """One portal's slot-taker over the shared count."""

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

    def take(self) -> None:
        with self._db.transaction(None) as cur:
            wait = limits.take(
                cur,
                self._provider,
                self._account,
                self._clock(),
                burst=self._burst,
                window=self._window,
                daily=self._daily,
            )
        if wait is not None:
            raise ProviderUnavailable(
                "HubSpot's limit for this portal is reached (shared by every instance)",
                retry_after=wait,
                reason="shared_limit",
            )
        self.taken += 1


class LimitedCrm:
    """A ``CrmClient`` whose every call first takes a slot of ``limit``."""

    def __init__(self, client: CrmClient, limit: SharedLimit) -> None:
        self._client, self._limit = client, limit

    def _call(self, method: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        self._limit.take()
        return method(*args, **kwargs)

    def page(
        self,
        object_type: CrmObjectType,
        properties: Sequence[str],
        after: str | None = None,
        limit: int = 100,
    ) -> RecordPage:
        return self._call(self._client.page, object_type, properties, after, limit)

    def read(
        self, object_type: CrmObjectType, ids: Sequence[str], properties: Sequence[str]
    ) -> list[CrmRecord]:
        return self._call(self._client.read, object_type, ids, properties)

    def search(self, object_type: CrmObjectType, query: SearchQuery) -> RecordPage:
        return self._call(self._client.search, object_type, query)

    def associations(
        self, from_type: CrmObjectType, ids: Sequence[str], to_type: CrmObjectType
    ) -> dict[str, tuple[str, ...]]:
        if not ids:
            return {}
        return self._call(self._client.associations, from_type, ids, to_type)

    def pipelines(self) -> list[Pipeline]:
        return self._call(self._client.pipelines)

    def deal_fields(self, deal_id: str, names: Sequence[str]) -> dict[str, FieldVersion]:
        return self._call(self._client.deal_fields, deal_id, names)

    def update_deal(self, deal_id: str, changes: Sequence[FieldChange]) -> CrmRecord:
        return self._call(self._client.update_deal, deal_id, changes)

    def log_engagement(self, engagement: Engagement) -> EngagementRef:
        return self._call(self._client.log_engagement, engagement)

    def rate_limit(self) -> RateLimit:
        return self._client.rate_limit()
