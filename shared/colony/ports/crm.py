"""The team's CRM (issue 36): its contacts, companies and deals read, a deal updated and
activity logged there, and connecting an org to it (``CrmClient``, ``CrmAuthorizer``).

HubSpot is the first adapter (``colony.adapters.hubspot``, its OAuth in
``colony.adapters.hubspot_oauth``); ``docs/crm.md`` says what a Salesforce adapter would map
each name to. The port speaks the CRM's own ids (strings) and its property names; what they
mean to us (a stage mapping, a field mapping) is the flows'.

Conventions every adapter keeps:

- Reads page with an opaque ``after`` cursor (None: the last page). A search pages no
  further than ``MAX_SEARCH_RESULTS`` results (HubSpot's 10,000): a caller that needs more
  narrows the filter (``updated_at`` past the last one seen) and searches again.
- Timestamps are ISO 8601 in UTC with milliseconds (``2026-03-01T09:30:00.000Z``).
- A deal update names, per field, the value and the version we read (``FieldChange``); if the
  CRM's version differs it is refused whole (``CrmConflict``, naming both values), nothing
  written. A field that already holds the value asked for is not a conflict (a retried
  update finds its own write).
- An engagement carries an idempotency key; logging it again with the same key returns the
  first one (``created`` False) and creates nothing.
- 429s are honoured (``Retry-After``, bounded); what the CRM says of its limits after each
  answer is ``rate_limit()``. A token the CRM refuses is ``CrmAccessRefused``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

CrmObjectType = Literal["contacts", "companies", "deals"]
EngagementKind = Literal["email", "note", "call"]
Operator = Literal[
    "EQ", "NEQ", "LT", "LTE", "GT", "GTE", "IN", "NOT_IN", "HAS_PROPERTY", "NOT_HAS_PROPERTY"
]
MAX_SEARCH_RESULTS = 10_000
MAX_BATCH = 100  # ids per batch read


@dataclass(frozen=True, slots=True)
class CrmRecord:
    """One contact, company or deal: the properties asked for (None: no value)."""

    object_type: CrmObjectType
    id: str
    properties: Mapping[str, str | None]
    updated_at: str
    archived: bool = False


@dataclass(frozen=True, slots=True)
class RecordPage:
    records: list[CrmRecord]
    after: str | None  # the next page's cursor; None: this was the last
    total: int | None = None  # a search's count of matches (all of them, past the cap too)


@dataclass(frozen=True, slots=True)
class SearchFilter:
    """``property`` compared with ``value`` (``IN``/``NOT_IN``: ``values``)."""

    property: str
    operator: Operator
    value: str | None = None
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SearchQuery:
    """Records matching any group, each group all of its filters (no groups: every record),
    sorted by one property, ``limit`` a page (at most 200)."""

    groups: tuple[tuple[SearchFilter, ...], ...] = ()
    properties: tuple[str, ...] = ()
    sort: str | None = None  # a property name; None: by id
    descending: bool = False
    limit: int = 100
    after: str | None = None


@dataclass(frozen=True, slots=True)
class Stage:
    id: str
    label: str
    order: int
    closed: bool
    probability: float | None = None


@dataclass(frozen=True, slots=True)
class Pipeline:
    id: str
    label: str
    stages: tuple[Stage, ...]


@dataclass(frozen=True, slots=True)
class FieldChange:
    """Set ``name`` to ``value``, if the CRM still holds what we read: ``read_value`` last
    changed at ``read_at`` (None for both: it had no value)."""

    name: str
    value: str | None
    read_value: str | None
    read_at: str | None


@dataclass(frozen=True, slots=True)
class FieldVersion:
    """A field of a record as the CRM holds it now: its value and when that value was set
    (None for both: it never had one). A ``FieldChange`` is built from it."""

    value: str | None
    set_at: str | None


@dataclass(frozen=True, slots=True)
class FieldConflict:
    """A field the CRM changed since we read it: ours, what we read, and theirs now."""

    name: str
    ours: str | None
    read_value: str | None
    theirs: str | None
    changed_at: str | None


@dataclass(frozen=True, slots=True)
class Engagement:
    """An activity logged on contacts, companies and deals. ``key`` is ours: the same key
    logs one engagement however often it is sent. Email: ``subject``, ``body`` and
    ``direction``; note: ``body``; call: ``subject`` (its title) and ``body`` (the summary)."""

    kind: EngagementKind
    key: str
    timestamp: str
    body: str
    subject: str | None = None
    direction: Literal["outbound", "inbound"] = "outbound"
    contact_ids: tuple[str, ...] = ()
    company_ids: tuple[str, ...] = ()
    deal_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class EngagementRef:
    kind: EngagementKind
    id: str
    created: bool  # False: the key had been logged before; nothing new was created


@dataclass(frozen=True, slots=True)
class RateLimit:
    """The CRM's account of its limits after the latest answer (None: not said)."""

    interval_max: int | None = None
    interval_remaining: int | None = None
    interval_ms: int | None = None
    daily_max: int | None = None
    daily_remaining: int | None = None


@runtime_checkable
class CrmClient(Protocol):
    """One connected CRM account, read and written with its token."""

    def page(
        self,
        object_type: CrmObjectType,
        properties: Sequence[str],
        after: str | None = None,
        limit: int = 100,
    ) -> RecordPage:
        """Records in id order, ``limit`` (at most 100) from ``after``."""
        ...

    def read(
        self, object_type: CrmObjectType, ids: Sequence[str], properties: Sequence[str]
    ) -> list[CrmRecord]:
        """The records of ``ids`` (at most ``MAX_BATCH``) that exist, in the order asked."""
        ...

    def search(self, object_type: CrmObjectType, query: SearchQuery) -> RecordPage:
        """One page of matches; past ``MAX_SEARCH_RESULTS`` it is ``ValidationFailed``."""
        ...

    def associations(
        self, from_type: CrmObjectType, ids: Sequence[str], to_type: CrmObjectType
    ) -> dict[str, tuple[str, ...]]:
        """Each of ``ids`` (at most ``MAX_BATCH``) → the ids it is associated with, sorted
        (an id with none, or that does not exist, is left out)."""
        ...

    def pipelines(self) -> list[Pipeline]:
        """The deal pipelines with their stages, in display order."""
        ...

    def deal_fields(self, deal_id: str, names: Sequence[str]) -> dict[str, FieldVersion]:
        """Each of ``names`` on the deal as it is now, with when it was set (what a card
        keeps as "what we read"); ``NotFound`` for a deal that is not there."""
        ...

    def update_deal(self, deal_id: str, changes: Sequence[FieldChange]) -> CrmRecord:
        """Apply ``changes`` if none conflicts; ``CrmConflict`` (naming each) otherwise,
        ``NotFound`` for a deal that is not there. Returns the deal with the changed fields."""
        ...

    def log_engagement(self, engagement: Engagement) -> EngagementRef:
        """Create the engagement, associated with its records, once per ``key``."""
        ...

    def rate_limit(self) -> RateLimit:
        """What the latest answer said of the limits (all None before the first)."""
        ...


@runtime_checkable
class RequestBudget(Protocol):
    """A CRM account's request limit as the adapter spends it: one slot per HTTP request
    (production: the portal's count shared by every instance, ``flows.crm.limits``)."""

    def take(self, calls: int = 1) -> None:
        """Room for ``calls`` requests now, or ``ProviderUnavailable`` with the wait (then
        none is counted and none may be made)."""
        ...

    def spend(self, calls: int = 1) -> None:
        """Count ``calls`` requests that must be made whatever the count (undoing our own
        write); never refused."""
        ...


@runtime_checkable
class WriteLedger(Protocol):
    """Where the writes made under an idempotency key are kept (the org's
    ``crm_writes`` rows in production: ``colony.store.crm.writes``)."""

    def recorded(self, key: str) -> str | None:
        """The CRM id logged under ``key`` (None: nothing yet)."""
        ...

    def record(self, key: str, kind: str, remote_id: str) -> str:
        """Keep ``remote_id`` under ``key``; the id kept (the first one, if a concurrent
        write kept one before)."""
        ...


@dataclass(frozen=True, slots=True)
class CrmTokens:
    """What an OAuth grant answered. The refresh token is a credential: kept in Secret
    Manager only, never logged."""

    access_token: str
    refresh_token: str
    expires_in: int  # seconds the access token lives from when it was answered


@dataclass(frozen=True, slots=True)
class CrmAccount:
    """Whose an access token is: the CRM account (HubSpot's portal / hub id) and scopes."""

    account_id: str
    scopes: tuple[str, ...] = field(default_factory=tuple)
    user: str | None = None


@runtime_checkable
class CrmAuthorizer(Protocol):
    """The CRM app's OAuth: where a person is sent to allow it, and the token grants.
    ``CrmAccessRefused`` when the CRM refuses a code or a refresh token."""

    scopes: tuple[str, ...]  # what the app asks for (and a connection needs)

    def authorize_url(self, state: str, redirect_uri: str) -> str: ...

    def exchange_code(self, code: str, redirect_uri: str) -> CrmTokens: ...

    def refresh(self, refresh_token: str) -> CrmTokens: ...

    def account(self, access_token: str) -> CrmAccount: ...

    def revoke(self, refresh_token: str) -> None:
        """Revoke the refresh token (one already unknown counts as revoked)."""
        ...
