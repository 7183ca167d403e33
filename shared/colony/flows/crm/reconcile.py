"""The daily reconciliation (issue 36 item 2): what HubSpot's webhooks missed, found by
searching what changed since the last sync and applying it like any read.

    the ``crm-reconcile`` schedule ─► one task per org with a connected HubSpot ─► ``run``:
        the org's pending webhook events first (``events.drain``: those kept while paused)
        ─► per object type, a search for ``hs_lastmodifieddate`` (contacts:
        ``lastmodifieddate``) at or after the watermark, oldest first, 200 a page, with the
        associations a row needs ─► each page applied (``flows.crm.apply``: only what is
        newer than what was applied) ─► the watermark moved to the newest change seen

HubSpot's search stops at 10,000 results: past that, the filter is narrowed to the newest
modification time seen so far and the search starts again (records at that instant are read
twice, and applied once). The watermark is in HubSpot's clock: the newest ``updatedAt``
applied (the first run starts an hour before the newest record the backfill applied, which
covers what changed while it ran). A search does not return deleted records: a deletion
whose webhook was lost is not found here (docs/crm.md says what would).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import partial
from typing import Any

from colony.errors import ConnectionPaused, ProviderUnavailable
from colony.flows.crm.apply import ASSOCIATED, PROPERTIES, PROVIDER, Outcome, when
from colony.flows.crm.backfill import CrmAccess
from colony.flows.crm.connections import status
from colony.flows.crm.events import ORDER, drain, refresh
from colony.flows.deps import FlowDeps
from colony.ports import CrmClient, CrmObjectType, SearchFilter, SearchQuery
from colony.ports.crm import MAX_BATCH, MAX_SEARCH_RESULTS
from colony.store.crm import connections as repo
from colony.store.crm import records

MODIFIED: dict[CrmObjectType, str] = {
    "contacts": "lastmodifieddate",
    "companies": "hs_lastmodifieddate",
    "deals": "hs_lastmodifieddate",
}
PAGE = 200
FIRST_MARGIN = timedelta(hours=1)


def _ms(moment: datetime) -> str:
    return str(int(moment.timestamp() * 1000))


def run(deps: FlowDeps, access: CrmAccess, org_id: str) -> dict[str, Any]:
    """Reconcile one org; what it found."""
    connection = status(deps, org_id)
    if connection["status"] != "connected":
        return {"status": "skipped", "reason": f"HubSpot is {connection['status']}"}
    drained = drain(deps, access, org_id, schedule=False)
    with deps.db.transaction(org_id) as cur:
        since = repo.get(cur, PROVIDER)["synced_through"]  # type: ignore[index]
        if since is None:
            applied = records.last_applied(cur, PROVIDER)
            if applied is None:
                return {"status": "skipped", "reason": "nothing backfilled yet", **drained}
            since = applied - FIRST_MARGIN
    found = Outcome()
    newest = since
    try:
        for object_type in ORDER:
            read = partial(_type, deps=deps, org_id=org_id, object_type=object_type, since=since)
            outcome, seen = access(org_id, read)
            found.add(outcome)
            newest = max(newest, seen)
    except ConnectionPaused:
        return {"status": "paused"}
    except ProviderUnavailable as limited:
        # the next run starts from the same watermark: nothing is lost, re-reads are no-ops
        return {"status": "waiting", "waiting_seconds": limited.retry_after}
    with deps.db.transaction(org_id) as cur:
        repo.synced(cur, PROVIDER, newest)
    return {
        "status": "reconciled",
        "since": since.isoformat(),
        "through": newest.isoformat(),
        "created": found.created,
        "updated": found.updated,
        "unchanged": found.unchanged,
        "held": found.held,
        "events": drained.get("applied", 0),
    }


def _type(
    client: CrmClient, deps: FlowDeps, org_id: str, object_type: CrmObjectType, since: datetime
) -> tuple[Outcome, datetime]:
    """Every record of a type changed at or after ``since``, applied page by page."""
    prop, total, newest = MODIFIED[object_type], Outcome(), since
    floor, after = since, None
    while True:
        query = SearchQuery(
            groups=((SearchFilter(prop, "GTE", _ms(floor)),),),
            properties=(*PROPERTIES[object_type], prop),
            sort=prop,
            limit=PAGE,
            after=after,
        )
        page = client.search(object_type, query)
        linked: dict[str, tuple[str, ...]] = {}
        to = ASSOCIATED[object_type]
        for start in range(0, len(page.records), MAX_BATCH):
            chunk = [r.id for r in page.records[start : start + MAX_BATCH]]
            linked |= client.associations(object_type, chunk, to) if to else {}
        read = {object_type: (page.records, linked)}
        with deps.db.transaction(org_id) as cur:
            outcome, _ = refresh(cur, deps, org_id, {}, read)
        total.add(outcome)
        stamps = [t for r in page.records if (t := when(r.properties.get(prop)))]
        newest = max([newest, *stamps])
        if page.after is None:
            return total, newest
        if int(page.after) + PAGE > MAX_SEARCH_RESULTS:
            # HubSpot answers no page past the 10,000th result: search again from the newest
            # modification seen (if one instant holds 10,000 records, there is no narrower
            # filter: move one millisecond on, and say so in the docs)
            floor = newest if newest > floor else floor + timedelta(milliseconds=1)
            after = None
        else:
            after = page.after
