"""What Colony writes to an org's CRM, each as a durable task after the act that caused it
commits (issue 36 item 3): an approved deal update (``deal_writes``), a sent message, a
reply, a call's summary (``engagements``).

    a person approves / a send is confirmed / a reply or a call is stored
        ─► ``queue`` (in that transaction): a ``crm_pushes`` row, unique per source, and a
           task on the CRM queue named by the row (a re-applied approval, a redelivered
           event: one row, one task)
    the task ─► ``outgoing.run``: the row claimed (locked, counted) ─► already settled? done
        ─► not connected: ``not_connected`` ─► paused: ``waiting`` ─► the write
           (``deal_writes.write`` / ``engagements.log``) with the org's own token
           (``connections.with_client``) ─► ``written`` / ``conflict`` / ``unlinked`` /
           ``unmapped`` / ``refused``, in our words

Never inside the decision's transaction: the CRM is called only by the task, after the
commit (a task that runs before the commit is visible finds no row and is retried).
Exactly once: a settled row is never written again, HubSpot's update is idempotent (a field
holding our value is no conflict), and an engagement's key is ours (``crm_writes``), so a
retried task logs one. A paused connection keeps its pushes ``waiting``; reconnecting queues
them again (``outgoing.resume``): nothing is lost. HubSpot's limit (``ProviderUnavailable``:
the portal's shared count is full, or HubSpot answered 429) queues the task again after the
wait (``outgoing.run``, ``deal_writes.read_card``): nothing sleeps, the push stays queued.

Every read and write is under the org's RLS and with the org's token only: another org's
push, deal or link is not found at all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from colony.errors import ConnectionPaused, NotFound
from colony.flows.crm import connections
from colony.flows.deps import FlowDeps
from colony.ports import CrmAuthorizer, CrmClient, SecretStore
from colony.registry.functions import CRM_QUEUE
from colony.runtime.transport import enqueue
from colony.store.crm import connections as connection_rows
from colony.store.crm import pushes as repo

T = TypeVar("T")
PROVIDER = connections.PROVIDER
LIVE = ("connected", "paused")  # a paused connection's pushes wait for the reconnect
NOT_CONNECTED = "HubSpot is not connected to this organisation"


@dataclass(frozen=True, slots=True)
class CrmParts:
    """What a push needs from the composition: the org's tokens (Secret Manager), the CRM
    app's OAuth (to refresh them) and a client for one org's token, its writes kept in that
    org's ledger (``connect(org_id, access_token)``)."""

    secrets: SecretStore
    auth: CrmAuthorizer
    connect: Callable[[str, str], CrmClient]


class PushNotYet(NotFound):
    """The push (or the card to read) is not visible yet: the act that queued it has not
    committed. Answered 404, which Cloud Tasks retries."""

    code = "crm_push_not_yet"
    expected = True


class Unavailable(Exception):
    """The org's connection cannot be used now: ``status`` is what the push becomes."""

    def __init__(self, status: repo.Status, outcome: str) -> None:
        super().__init__(outcome)
        self.status, self.outcome = status, outcome


def connection_status(cur: Any) -> str | None:
    """The org's HubSpot connection status (None: never connected)."""
    row = connection_rows.get(cur, PROVIDER)
    return str(row["status"]) if row else None


def queue(
    deps: FlowDeps, cur: Any, org_id: str, kind: repo.Kind, source_id: str, *, record: bool
) -> str | None:
    """A push of ``source_id`` and its task, in the caller's transaction; its id, or None
    when it has one already or the org has no live connection. ``record``: an org that is
    not connected still gets the push, settled ``not_connected`` (what a person approved
    is accounted for; a sent email of an org without a CRM is not worth a row)."""
    live = connection_status(cur) in LIVE
    if not live and not record:
        return None
    push_id = repo.add(cur, org_id, PROVIDER, kind, source_id)
    if push_id is None:
        return None
    if live:
        schedule(deps, org_id, push_id)
    else:
        repo.settle(cur, push_id, "not_connected", NOT_CONNECTED)
    return push_id


def schedule(
    deps: FlowDeps, org_id: str, push_id: str, *, attempt: str = "", delay: float = 0.0
) -> str:
    """The push's task (named by the row; ``attempt`` names a later hand-over: a resume, or
    a wait for HubSpot's limit of ``delay`` seconds)."""
    # lazy: the task model loads with the first push (pydantic models)
    from colony.contracts.crm_tasks import CrmPush, CrmTaskBody

    body = CrmTaskBody(task=CrmPush(org_id=org_id, push_id=push_id))
    name = f"crm-{push_id}" + (f"-{attempt}" if attempt else "")
    return enqueue(deps.transport, CRM_QUEUE, body, task_id=name, delay_seconds=delay)


def with_client(deps: FlowDeps, parts: CrmParts, org_id: str, work: Callable[[CrmClient], T]) -> T:
    """``work`` with the org's own CRM client; a connection that is gone or paused (now, or
    because HubSpot refused its token here) is ``Unavailable``, and nothing was written."""
    reached = False

    def inside(client: CrmClient) -> T:
        nonlocal reached
        reached = True
        return work(client)

    try:
        return connections.with_client(
            deps,
            parts.secrets,
            parts.auth,
            lambda token: parts.connect(org_id, token),
            org_id,
            inside,
        )
    except ConnectionPaused:
        raise Unavailable("waiting", "HubSpot is paused: waiting for a reconnect") from None
    except NotFound:
        if reached:  # the CRM's own NotFound: the caller says what it means
            raise
        raise Unavailable("not_connected", NOT_CONNECTED) from None
