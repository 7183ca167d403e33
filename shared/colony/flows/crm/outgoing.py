"""The CRM queue's side of what Colony writes to an org's CRM (``pushes`` says how a push
comes to be): ``run`` writes one push, or records why not; ``complete`` finishes an org's
(re)connection and queues again what waited while it was paused (``resume``).

Kept apart from ``pushes`` so the kinds of write (``deal_writes``, ``engagements``) and the
connection flows build on ``pushes`` without a circle: this module is the only one that
knows them all.
"""

from __future__ import annotations

from typing import Any

from colony.contracts.admin import CrmCallback
from colony.errors import ProviderUnavailable
from colony.flows.crm import connections, deal_writes, engagements
from colony.flows.crm.limits import limit_wait
from colony.flows.crm.pushes import (
    LIVE,
    NOT_CONNECTED,
    PROVIDER,
    CrmParts,
    PushNotYet,
    Unavailable,
    connection_status,
    schedule,
)
from colony.flows.deps import FlowDeps
from colony.ports import CrmAuthorizer, SecretStore
from colony.store.crm import pushes as repo


def complete(
    deps: FlowDeps,
    secrets: SecretStore,
    auth: CrmAuthorizer,
    org_id: str,
    user_id: str,
    body: CrmCallback,
) -> dict[str, Any]:
    """``connections.complete``, then the pushes that waited for it queued again."""
    answer = connections.complete(deps, secrets, auth, org_id, user_id, body)
    resume(deps, org_id)
    return answer


def resume(deps: FlowDeps, org_id: str) -> list[str]:
    """The org's waiting pushes queued again (an admin reconnected); their ids."""
    with deps.db.transaction(org_id) as cur:
        waiting = repo.requeue_waiting(cur, PROVIDER)
        for push_id in waiting:
            row = repo.by_id(cur, push_id)
            schedule(deps, org_id, push_id, attempt=f"resume-{row['attempts'] if row else 0}")
    return waiting


def run(deps: FlowDeps, parts: CrmParts, org_id: str, push_id: str) -> dict[str, Any]:
    """The task: one push written, or why not, recorded on its row."""
    with deps.db.transaction(org_id) as cur:
        push = repo.claim(cur, push_id)
        if push is None:
            raise PushNotYet(f"CRM push {push_id!r} is not in this org (yet)")
        if push["status"] in repo.FINAL:
            return _answer(push, duplicate=True)
        status = connection_status(cur)
        if status not in LIVE:
            repo.settle(cur, push_id, "not_connected", NOT_CONNECTED)
            return _answer(push | {"status": "not_connected"})
        if status == "paused":
            repo.settle(cur, push_id, "waiting", "HubSpot is paused: waiting for a reconnect")
            return _answer(push | {"status": "waiting"})
    write = deal_writes.write if push["kind"] == "deal_update" else engagements.log
    try:
        settled = write(deps, parts, org_id, push)
    except ProviderUnavailable as limited:  # HubSpot's limit: again after its wait
        wait = limit_wait(limited)
        schedule(deps, org_id, push_id, attempt=f"limit-{push['attempts']}", delay=wait)
        return _answer(push) | {"waiting_seconds": wait}
    except Unavailable as why:
        with deps.db.transaction(org_id) as cur:
            repo.settle(cur, push_id, why.status, why.outcome)
        return _answer(push | {"status": why.status})
    return _answer(push | settled)


def _answer(push: Any, *, duplicate: bool = False) -> dict[str, Any]:
    keys = ("id", "kind", "status", "remote_id", "conflict_item_id")
    answer = {k: push.get(k) for k in keys}
    return answer | {"duplicate": True} if duplicate else answer
