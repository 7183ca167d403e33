"""``colony.ports.CrmClient`` over HubSpot's CRM API, through the official
``hubspot-api-client`` (the only module that imports it: 18.6 MB of Python, 0.4 s to import,
so only a function whose composition reaches this adapter carries it; docs/crm.md).

Which calls: the generic objects API (``/crm/v3/objects/{type}``: list, batch read, search,
get with ``propertiesWithHistory``, update, create with associations), associations v4's batch
read, and the deal pipelines. One ``hubspot.Client`` per token, its ``host`` the setting
``COLONY_HUBSPOT_BASE_URL`` (a stand-in locally: ``colony.testing.hubspot_server``), its API
objects built once.

Limits. urllib3's own retries are off (``sdk_client`` says why). Each answer's
``X-HubSpot-RateLimit-*`` headers are kept (``rate_limit``). A 429 is waited out when it says
how long (``Retry-After``) and that is at most ``max_wait``, up to ``attempts`` times; a daily
limit, a longer wait or the last attempt raises ``ProviderUnavailable`` carrying the wait, so
a durable task is rescheduled instead of sleeping. 5xx and a refused connection are retried
the same bounded way. Every HTTP request (a retry too) first takes a slot of the given
``RequestBudget`` (the portal's shared count); ``update_deal`` takes its two at once, never
left half done, and archiving a concurrent duplicate engagement is counted, never refused.

Conflicts. HubSpot has no conditional update, so ``update_deal`` reads each field's latest
version (``propertiesWithHistory``) and compares it with what we read; only when none changed
does it PATCH. What HubSpot changes in the moment between that read and the PATCH is not
seen: the window is one round trip, not the minutes a card waits for a person.

Idempotent engagements. The key is looked up in the ``WriteLedger`` first; after HubSpot
creates the engagement (one call, with its associations) its id is kept under the key. If a
concurrent write kept another id first, ours is archived and theirs returned. A crash between
HubSpot's answer and the ledger's write can still leave one duplicate (docs/crm.md).

Errors: 401/403 ``CrmAccessRefused`` (HubSpot's ``category`` as the reason), 404
``NotFound``, 400 ``ValidationFailed`` (HubSpot's message), never a body in a log.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hubspot import HubSpot
from hubspot.crm.associations.v4 import (
    BatchInputPublicFetchAssociationsBatchRequest,
    PublicFetchAssociationsBatchRequest,
)
from hubspot.crm.associations.v4.exceptions import ApiException as AssociationsError
from hubspot.crm.objects import (
    AssociationSpec,
    BatchReadInputSimplePublicObjectId,
    Filter,
    FilterGroup,
    PublicAssociationsForObject,
    PublicObjectId,
    PublicObjectSearchRequest,
    SimplePublicObjectId,
    SimplePublicObjectInput,
    SimplePublicObjectInputForCreate,
)
from hubspot.crm.objects.exceptions import ApiException as ObjectsError
from hubspot.crm.pipelines.exceptions import ApiException as PipelinesError
from urllib3.exceptions import HTTPError
from urllib3.util.retry import Retry

from colony.adapters.hubspot_records import (
    ENGAGEMENT_LINKS,
    Latest,
    body_of,
    conflict_error,
    decide,
    engagement_properties,
    iso,
    mapped_error,
    probability,
    rate_limit_of,
    reason_of,
)
from colony.adapters.retry_after import retry_after_seconds
from colony.errors import (
    ConfigError,
    ProviderUnavailable,
)
from colony.ports import (
    CrmObjectType,
    CrmRecord,
    Engagement,
    EngagementRef,
    FieldChange,
    FieldVersion,
    Pipeline,
    RateLimit,
    RecordPage,
    RequestBudget,
    SearchQuery,
    Stage,
    WriteLedger,
)
from colony.settings import Settings

API_ERRORS = (ObjectsError, AssociationsError, PipelinesError)
RETRYABLE = frozenset({429, 500, 502, 503, 504})
DEFAULT_HOST = "https://api.hubapi.com"


class HubSpotCrm:
    """One HubSpot portal, read and written with one access token."""

    def __init__(
        self,
        client: HubSpot,
        ledger: WriteLedger,
        *,
        attempts: int = 4,
        max_wait: float = 10.0,
        sleep: Callable[[float], None] = time.sleep,
        timeout: float = 30.0,
        budget: RequestBudget | None = None,
    ) -> None:
        self._ledger, self._attempts, self._max_wait = ledger, attempts, max_wait
        self._budget = budget
        self._sleep, self._timeout = sleep, timeout
        objects = client.crm.objects
        self._basic, self._batch, self._search = (
            objects.basic_api,
            objects.batch_api,
            objects.search_api,
        )
        self._links = client.crm.associations.v4.batch_api
        self._pipelines = client.crm.pipelines.pipelines_api
        self._limits = RateLimit()
        self.calls = 0  # HTTP requests made, retries included (the benchmark counts them)

    # -- reads ---------------------------------------------------------------------------------

    def page(
        self,
        object_type: CrmObjectType,
        properties: Sequence[str],
        after: str | None = None,
        limit: int = 100,
    ) -> RecordPage:
        extra: dict[str, Any] = {"after": after} if after else {}
        answer = self._call(
            self._basic.get_page_with_http_info,
            object_type,
            limit=max(1, min(limit, 100)),
            properties=list(properties),
            archived=False,
            **extra,
        )
        return RecordPage(_records(object_type, answer.results), _after(answer))

    def read(
        self, object_type: CrmObjectType, ids: Sequence[str], properties: Sequence[str]
    ) -> list[CrmRecord]:
        if not ids:
            return []
        body = BatchReadInputSimplePublicObjectId(
            properties=list(properties),
            properties_with_history=[],
            inputs=[SimplePublicObjectId(id=i) for i in ids],
        )
        answer = self._call(self._batch.read_with_http_info, object_type, body, archived=False)
        found = {r.id: r for r in _records(object_type, answer.results)}
        return [found[i] for i in ids if i in found]

    def search(self, object_type: CrmObjectType, query: SearchQuery) -> RecordPage:
        groups = [
            FilterGroup(
                filters=[
                    Filter(
                        property_name=f.property,
                        operator=f.operator,
                        value=f.value,
                        values=list(f.values) or None,
                    )
                    for f in group
                ]
            )
            for group in query.groups
        ]
        sorts: list[Any] = []
        if query.sort:
            direction = "DESCENDING" if query.descending else "ASCENDING"
            sorts = [{"propertyName": query.sort, "direction": direction}]
        body = PublicObjectSearchRequest(
            filter_groups=groups,
            sorts=sorts,
            properties=list(query.properties),
            limit=max(1, min(query.limit, 200)),
            after=query.after or "0",
        )
        answer = self._call(self._search.do_search_with_http_info, object_type, body)
        return RecordPage(_records(object_type, answer.results), _after(answer), answer.total)

    def associations(
        self, from_type: CrmObjectType, ids: Sequence[str], to_type: CrmObjectType
    ) -> dict[str, tuple[str, ...]]:
        if not ids:
            return {}
        body = BatchInputPublicFetchAssociationsBatchRequest(
            inputs=[PublicFetchAssociationsBatchRequest(id=i) for i in ids]
        )
        answer = self._call(self._links.get_page_with_http_info, from_type, to_type, body)
        return {
            str(r._from.id): tuple(sorted({str(t.to_object_id) for t in r.to or []}, key=int))
            for r in answer.results or []
            if r.to
        }

    def pipelines(self) -> list[Pipeline]:
        answer = self._call(self._pipelines.get_all_with_http_info, "deals")
        return [
            Pipeline(
                id=p.id,
                label=p.label,
                stages=tuple(
                    Stage(
                        id=s.id,
                        label=s.label,
                        order=int(s.display_order or 0),
                        closed=(s.metadata or {}).get("isClosed") == "true",
                        probability=probability((s.metadata or {}).get("probability")),
                    )
                    for s in sorted(p.stages or [], key=lambda s: s.display_order or 0)
                ),
            )
            for p in sorted(answer.results or [], key=lambda p: (p.display_order or 0, p.id))
        ]

    def rate_limit(self) -> RateLimit:
        return self._limits

    # -- writes --------------------------------------------------------------------------------

    def deal_fields(self, deal_id: str, names: Sequence[str]) -> dict[str, FieldVersion]:
        _, versions = self._versions(deal_id, names)
        return {n: FieldVersion(*versions.get(n, (None, None))) for n in names}

    def _versions(
        self, deal_id: str, names: Sequence[str], paid: bool = False
    ) -> tuple[Any, Latest]:
        """The deal, and each field's newest version (value, when it was set)."""
        deal = self._call(
            self._basic.get_by_id_with_http_info,
            "deals",
            deal_id,
            properties=list(names),
            properties_with_history=list(names),
            _paid=paid,
        )
        history = deal.properties_with_history or {}
        latest = {
            name: (versions[0].value, iso(versions[0].timestamp))
            for name, versions in history.items()
            if versions
        }
        return deal, latest

    def update_deal(self, deal_id: str, changes: Sequence[FieldChange]) -> CrmRecord:
        if self._budget is not None:  # the read and the PATCH, or neither
            self._budget.take(2)
        deal, latest = self._versions(deal_id, [c.name for c in changes], paid=True)
        pending, conflicts = decide(changes, latest)
        if conflicts:
            raise conflict_error(deal_id, conflicts)
        if pending:  # (none pending: its slot is spent unused, counted high, never low)
            body = SimplePublicObjectInput(properties=pending)
            deal = self._call(self._basic.update_with_http_info, "deals", deal_id, body, _paid=True)
        return _record("deals", deal)

    def log_engagement(self, engagement: Engagement) -> EngagementRef:
        kept = self._ledger.recorded(engagement.key)
        if kept is not None:
            return EngagementRef(engagement.kind, kept, created=False)
        object_type = f"{engagement.kind}s"
        body = SimplePublicObjectInputForCreate(
            properties=engagement_properties(engagement),
            associations=[
                PublicAssociationsForObject(
                    to=PublicObjectId(id=record_id),
                    types=[
                        AssociationSpec(
                            association_category="HUBSPOT_DEFINED",
                            association_type_id=ENGAGEMENT_LINKS[(engagement.kind, to_type)],
                        )
                    ],
                )
                for to_type, ids in (
                    ("contacts", engagement.contact_ids),
                    ("companies", engagement.company_ids),
                    ("deals", engagement.deal_ids),
                )
                for record_id in ids
            ],
        )
        made = self._call(self._basic.create_with_http_info, object_type, body)
        kept = self._ledger.record(engagement.key, engagement.kind, str(made.id))
        if kept != str(made.id):  # a concurrent write of the same key kept its own first
            if self._budget is not None:
                self._budget.spend(1)
            archive = self._basic.archive_with_http_info
            self._call(archive, object_type, str(made.id), _paid=True)
            return EngagementRef(engagement.kind, kept, created=False)
        return EngagementRef(engagement.kind, kept, created=True)

    # -- the one way out -----------------------------------------------------------------------

    def _call(
        self, method: Callable[..., Any], *args: Any, _paid: bool = False, **kwargs: Any
    ) -> Any:
        """One logical call: the SDK's ``*_with_http_info`` (so headers are seen), retried
        within the bounds above; HubSpot's refusals mapped to ours. ``_paid``: the first
        request's slot was taken by the caller."""
        for attempt in range(1, self._attempts + 1):
            if self._budget is not None and (attempt > 1 or not _paid):
                self._budget.take(1)
            self.calls += 1
            try:
                data, _status, headers = method(*args, _request_timeout=self._timeout, **kwargs)
            except API_ERRORS as error:
                self._note(error.headers)
                wait = self._retry_wait(error, attempt)
                if wait is None:
                    raise mapped_error(error) from None
                self._sleep(wait)
                continue
            except HTTPError as error:
                if attempt == self._attempts:
                    raise ProviderUnavailable(
                        f"HubSpot could not be reached ({type(error).__name__})"
                    ) from None
                self._sleep(min(self._max_wait, 0.5 * attempt))
                continue
            self._note(headers)
            return data
        raise AssertionError("unreachable")  # the loop returns or raises

    def _retry_wait(self, error: Any, attempt: int) -> float | None:
        """How long to wait before trying again; None: raise now."""
        if error.status not in RETRYABLE:
            return None
        told = retry_after_seconds(error.headers)
        daily = error.status == 429 and body_of(error).get("policyName") == "DAILY"
        wait = told if told is not None else 0.5 * attempt
        if daily or attempt == self._attempts or wait > self._max_wait:
            raise ProviderUnavailable(
                f"HubSpot answered {error.status} ({'daily limit' if daily else 'retry later'})",
                retry_after=told,
                reason=reason_of(error),
            ) from None
        return wait

    def _note(self, headers: Mapping[str, str] | None) -> None:
        seen = rate_limit_of(headers)
        if seen is not None:
            self._limits = seen


def _records(object_type: CrmObjectType, results: Sequence[Any] | None) -> list[CrmRecord]:
    return [_record(object_type, r) for r in results or []]


def _record(object_type: CrmObjectType, obj: Any) -> CrmRecord:
    return CrmRecord(
        object_type=object_type,
        id=str(obj.id),
        properties=dict(obj.properties or {}),
        updated_at=str(iso(obj.updated_at)),
        archived=bool(obj.archived),
    )


def _after(answer: Any) -> str | None:
    paging = getattr(answer, "paging", None)
    nxt = getattr(paging, "next", None) if paging else None
    return str(nxt.after) if nxt is not None and nxt.after else None


def sdk_client(host: str, access_token: str) -> HubSpot:
    """The official client for ``host``, with urllib3's own retries off: left on, urllib3
    retries a 429 or 503 that carries ``Retry-After`` by itself and sleeps what it says, a
    daily limit's hours included. Every retry is ``HubSpotCrm._call``'s, bounded."""
    return HubSpot(access_token=access_token, host=host, retry=Retry(total=False))


def hubspot_for_token(
    settings: Settings,
    access_token: str,
    ledger: WriteLedger,
    *,
    attempts: int = 4,
    sleep: Callable[[float], None] | None = None,
    budget: RequestBudget | None = None,
) -> HubSpotCrm:
    """The client of one connected portal, calling with ``access_token`` within ``budget``."""
    if not access_token:
        raise ConfigError("a connected HubSpot portal has an empty access token")
    client = sdk_client(settings.hubspot_base_url or DEFAULT_HOST, access_token)
    extra: dict[str, Any] = {"sleep": sleep} if sleep else {}
    return HubSpotCrm(client, ledger, attempts=attempts, budget=budget, **extra)
