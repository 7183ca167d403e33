"""HubSpot's changes applied: the webhook's events, kept in ``crm_events`` by
``colony.flows.crm.webhook``, and the records the daily reconciliation finds.

    the org's pending events (oldest first) ─► merges followed first (the merged ids' links
        name the survivor; our row moves to it, or is archived as a twin) ─► every object an
        event names read as it is NOW, through the client (batch read, 100 ids a call, and
        its associations): the event's payload is never trusted for values ─► applied in one
        transaction (``flows.crm.apply``: only if newer than what was applied, so duplicates
        and out-of-order deliveries change nothing) ─► an id HubSpot no longer has is
        archived, never kept live ─► the events marked applied with their outcome

A paused connection leaves the events pending (nothing lost: reconnecting and the next
delivery or the daily reconciliation applies them); HubSpot's limit queues the drain again
after its wait. ``refresh`` is the read-and-apply step, shared with the reconciliation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from colony.contracts.crm_tasks import CrmEventsTask, CrmTaskBody
from colony.errors import ConnectionPaused, NotFound, ProviderUnavailable
from colony.flows.crm.apply import ASSOCIATED, PROPERTIES, PROVIDER, SINGULAR, Outcome, apply
from colony.flows.crm.backfill import DEFAULT_WAIT, CrmAccess
from colony.flows.deps import FlowDeps
from colony.ports import CrmClient, CrmObjectType, CrmRecord
from colony.ports.crm import MAX_BATCH
from colony.registry.functions import CRM_QUEUE
from colony.runtime.transport import enqueue
from colony.store.crm import events as inbox
from colony.store.crm import records, stages

ORDER: tuple[CrmObjectType, ...] = ("companies", "contacts", "deals")
PLURAL: dict[str, CrmObjectType] = {v: k for k, v in SINGULAR.items()}
DRAIN = 500  # events a drain takes at once
BURST_SECONDS = 5  # one drain task per org and window: a burst of deliveries shares it

Read = dict[CrmObjectType, tuple[list[CrmRecord], dict[str, tuple[str, ...]]]]


def schedule_drain(deps: FlowDeps, org_id: str, delay: float = 1.0) -> str:
    """Queue the org's drain, once per ``BURST_SECONDS`` window."""
    window = int(deps.clock().timestamp() + delay) // BURST_SECONDS
    return enqueue(
        deps.transport,
        CRM_QUEUE,
        CrmTaskBody(task=CrmEventsTask(org_id=org_id)),
        task_id=f"crm-events-{org_id}-{window}",
        delay_seconds=delay,
    )


def fetch(client: CrmClient, wanted: Mapping[CrmObjectType, Iterable[str]]) -> Read:
    """The records of ``wanted`` as HubSpot has them now, with the associations their rows
    need (missing ids: gone from HubSpot)."""
    found: Read = {}
    for object_type in ORDER:
        ids = sorted(set(wanted.get(object_type, ())), key=lambda i: (len(i), i))
        got: list[CrmRecord] = []
        linked: dict[str, tuple[str, ...]] = {}
        for start in range(0, len(ids), MAX_BATCH):
            some = ids[start : start + MAX_BATCH]
            chunk = client.read(object_type, some, PROPERTIES[object_type])
            got += chunk
            to = ASSOCIATED[object_type]
            if to and chunk:
                linked |= client.associations(object_type, [r.id for r in chunk], to)
        found[object_type] = (got, linked)
    return found


def refresh(
    cur: Any, deps: FlowDeps, org_id: str, wanted: Mapping[CrmObjectType, Iterable[str]], read: Read
) -> tuple[Outcome, set[tuple[str, str]]]:
    """Apply what was ``read``; archive what ``wanted`` names and HubSpot no longer has.
    The outcome, and the (type, id) pairs archived."""
    mapping = stages.mapping(cur, PROVIDER)
    outcome = Outcome()
    archived: set[tuple[str, str]] = set()
    for object_type in ORDER:
        got, linked = read.get(object_type, ([], {}))
        outcome.add(apply(cur, org_id, object_type, got, linked, mapping))
        present = {r.id for r in got}
        for missing in set(wanted.get(object_type, ())) - present:
            kind = SINGULAR[object_type]
            if records.archive(cur, PROVIDER, kind, missing, deps.clock()):
                archived.add((kind, missing))
    return outcome, archived


def drain(
    deps: FlowDeps, access: CrmAccess, org_id: str, *, limit: int = DRAIN, schedule: bool = True
) -> dict[str, Any]:
    """Apply the org's pending events (up to ``limit``; more are queued for later)."""
    with deps.db.transaction(org_id) as cur:
        pending = inbox.pending(cur, PROVIDER, limit)
    if not pending:
        return {"status": "idle", "applied": 0}
    wanted: dict[CrmObjectType, set[str]] = {t: set() for t in ORDER}
    for event in pending:
        wanted[PLURAL[str(event["object_type"])]].add(str(event["object_id"]))
    try:
        read = access(org_id, lambda client: fetch(client, wanted))
    except (ConnectionPaused, NotFound):  # paused or disconnected: kept, applied once back
        return {"status": "paused", "pending": len(pending)}
    except ProviderUnavailable as limited:
        wait = limited.retry_after if limited.retry_after is not None else DEFAULT_WAIT
        if schedule:
            schedule_drain(deps, org_id, max(1.0, wait))
        return {"status": "waiting", "pending": len(pending), "waiting_seconds": wait}
    with deps.db.transaction(org_id) as cur:
        for event in pending:
            if event["action"] == "merge":
                for merged in event["merged_ids"] or []:
                    if str(merged) != str(event["object_id"]):
                        records.merge(
                            cur,
                            org_id,
                            PROVIDER,
                            str(event["object_type"]),
                            str(merged),
                            str(event["object_id"]),
                            deps.clock(),
                        )
        outcome, archived = refresh(cur, deps, org_id, wanted, read)
        outcomes = {
            str(e["event_id"]): (
                "merged"
                if e["action"] == "merge"
                else "archived"
                if (e["object_type"], e["object_id"]) in archived or e["action"] == "deletion"
                else "applied"
            )
            for e in pending
        }
        inbox.applied(cur, PROVIDER, outcomes)
    if len(pending) == limit and schedule:
        schedule_drain(deps, org_id, 0.0)
    return {
        "status": "applied",
        "applied": len(pending),
        "created": outcome.created,
        "updated": outcome.updated,
        "unchanged": outcome.unchanged,
        "archived": len(archived),
        "held": outcome.held,
    }
