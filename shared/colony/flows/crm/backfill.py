"""An org's HubSpot backfill as a durable, resumable job (the import machinery: an
``import_jobs`` row of kind ``crm``, its counts, its ``import_errors``; docs/crm.md).

    admin ``POST /orgs/{org}/crm/hubspot/backfill`` ─► ``start``: one job per org at a time
        (a paused one is resumed), queued on the import queue
    data-lifecycle ``crm.backfill`` ─► ``run_job``: companies, then contacts (with their
        company), then deals (with their contact), 100 a page. Per page: one list call and
        one batch associations call, then in ONE transaction under the job row's lock: the
        records applied (``flows.crm.apply``), their notes as ``import_errors``, the cursor
        moved on. A crash at any record loses only the page in flight (its transaction rolls
        back); the retry reads it again from the cursor: nothing lost, nothing twice.

Stops. After ``PAGES_PER_RUN`` pages the task queues its continuation and returns (an org's
backfill takes its turn on the queue instead of holding an instance). HubSpot's limit
(``ProviderUnavailable`` with ``retry_after``: a 429, or our shared limiter) queues the
continuation after that wait instead of sleeping. A token HubSpot refuses pauses the
connection (``connections.with_client``: audited, the org is told on its status) and the job
with it (``paused``, the reason in ``failure``); ``start`` after reconnecting resumes it from
its cursor.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

from colony.contracts.crm_tasks import CrmBackfillTask, CrmTaskBody
from colony.errors import ConnectionPaused, NotFound, ProviderUnavailable, UpstreamError
from colony.flows.crm.apply import ASSOCIATED, PROPERTIES, Outcome, apply
from colony.flows.crm.connections import PROVIDER, status
from colony.flows.crm.limits import DEFAULT_WAIT
from colony.flows.deps import FlowDeps
from colony.ports import CrmClient, CrmObjectType, CrmRecord
from colony.registry.functions import CRM_QUEUE
from colony.runtime.transport import enqueue
from colony.store.crm import backfill as jobs
from colony.store.crm import stages
from colony.store.tenants import imports

T = TypeVar("T")
# How a flow reaches an org's CRM: (org, work) → work's answer, with the org's client
# (production: ``connections.with_client`` over the HubSpot adapter, behind the limiter).
CrmAccess = Callable[[str, Callable[[CrmClient], Any]], Any]
PHASES: tuple[CrmObjectType, ...] = ("companies", "contacts", "deals")
PAGE = 100
PAGES_PER_RUN = 50
_HIDDEN = ("object_name", "declared_bytes", "size_bytes", "content_sha256", "encoding")


class BackfillMoved(UpstreamError):
    """Another attempt of the same job advanced it meanwhile: retry from its cursor."""

    code = "backfill_moved"
    expected = True


def view(row: dict[str, Any]) -> dict[str, Any]:
    """A backfill job as the API and the CLI show it (the import jobs' shape)."""
    shown = {k: row[k] for k in row if k not in _HIDDEN}
    for key in ("created_at", "started_at", "finished_at"):
        shown[key] = row[key].isoformat() if row[key] else None
    return shown


def start(
    deps: FlowDeps, org_id: str, requested_by: str, *, schedule: bool = True
) -> dict[str, Any]:
    """Queue the org's backfill (the one running, or a paused one resumed, if there is one)."""
    connection = status(deps, org_id)
    if connection["status"] == "paused":
        raise ConnectionPaused(
            f"HubSpot is paused for this organisation: {connection['paused_reason']};"
            " reconnect it, then start the backfill again"
        )
    if connection["status"] != "connected":
        raise NotFound("HubSpot is not connected to this organisation")
    with deps.db.transaction(org_id) as cur:
        row = jobs.active(cur)
        if row is None:
            name = f"HubSpot portal {connection['account_id']}"
            cursor = {"phase": PHASES[0], "after": None}
            row = jobs.create(cur, org_id, name, requested_by, cursor, None)
        elif row["status"] == "paused":
            jobs.resume(cur, row["id"])
            row = jobs.job(cur, row["id"])
        assert row is not None
    if schedule:
        _continue(deps, org_id, row["id"], int(row["rows_done"]), 0.0)
    return view(row)


def latest(deps: FlowDeps, org_id: str) -> dict[str, Any]:
    """The org's backfill now (or its last one); ``NotFound`` if it never had one."""
    with deps.db.transaction(org_id) as cur:
        row = jobs.latest(cur)
    if row is None:
        raise NotFound("this organisation has no HubSpot backfill")
    return view(row)


def _continue(deps: FlowDeps, org_id: str, job_id: str, done: int, delay: float) -> None:
    """Queue the job's next run; named by how far it got, so a retried run queues it once."""
    task = CrmTaskBody(task=CrmBackfillTask(org_id=org_id, job_id=job_id))
    enqueue(
        deps.transport,
        CRM_QUEUE,
        task,
        task_id=f"crm-backfill-{job_id}-{done}-{int(delay)}",
        delay_seconds=delay,
    )


def _read(
    client: CrmClient, object_type: CrmObjectType, after: str | None
) -> tuple[list[CrmRecord], dict[str, tuple[str, ...]], str | None]:
    page = client.page(object_type, PROPERTIES[object_type], after=after, limit=PAGE)
    to = ASSOCIATED[object_type]
    linked = client.associations(object_type, [r.id for r in page.records], to) if to else {}
    return page.records, linked, page.after


def run_job(
    deps: FlowDeps,
    access: CrmAccess,
    org_id: str,
    job_id: str,
    *,
    pages: int = PAGES_PER_RUN,
    schedule: bool = True,
) -> dict[str, Any]:
    """Run the job for up to ``pages`` pages from its cursor; the job as it then is. With
    ``schedule``, what is left is queued (at once, or after HubSpot's wait)."""
    with deps.db.transaction(org_id) as cur:
        row = jobs.job(cur, job_id)
        if row is None:
            raise NotFound(f"backfill job {job_id!r} does not exist")
        if row["status"] not in ("queued", "running"):
            return view(row)
        jobs.running(cur, job_id)
    cursor = dict(row["cursor"] or {"phase": PHASES[0], "after": None})
    for _ in range(pages):
        phase: CrmObjectType = cursor["phase"]
        try:
            records, linked, after = access(
                org_id, partial(_read, object_type=phase, after=cursor["after"])
            )
        except (ConnectionPaused, NotFound) as stopped:
            # paused, or disconnected since it began: kept where it is, resumed by ``start``
            # once the org connects again (a task that failed here would be retried forever)
            reason = str(stopped)
            if isinstance(stopped, NotFound):
                reason += ": connect it, then start the backfill again"
            with deps.db.transaction(org_id) as cur:
                jobs.pause(cur, job_id, reason)
            return _view(deps, org_id, job_id)
        except ProviderUnavailable as limited:
            if schedule:
                wait = limited.retry_after if limited.retry_after is not None else DEFAULT_WAIT
                _continue(deps, org_id, job_id, _done(deps, org_id, job_id), max(1.0, wait))
            return {**_view(deps, org_id, job_id), "waiting_seconds": limited.retry_after}
        nxt = _next(phase, after)
        cursor = _write(deps, org_id, job_id, cursor, nxt, phase, records, linked)
        if nxt is None:
            with deps.db.transaction(org_id) as cur:
                jobs.finish(cur, job_id)
            return _view(deps, org_id, job_id)
    if schedule:
        _continue(deps, org_id, job_id, _done(deps, org_id, job_id), 0.0)
    return _view(deps, org_id, job_id)


def _next(phase: CrmObjectType, after: str | None) -> dict[str, Any] | None:
    if after is not None:
        return {"phase": phase, "after": after}
    index = PHASES.index(phase) + 1
    return {"phase": PHASES[index], "after": None} if index < len(PHASES) else None


def _write(
    deps: FlowDeps,
    org_id: str,
    job_id: str,
    cursor: dict[str, Any],
    nxt: dict[str, Any] | None,
    phase: CrmObjectType,
    records: list[CrmRecord],
    linked: dict[str, tuple[str, ...]],
) -> dict[str, Any]:
    """One page, its notes and the cursor, in one transaction; the cursor after it."""
    with deps.db.transaction(org_id) as cur:
        locked = jobs.job(cur, job_id, lock=True)
        if locked is None or dict(locked["cursor"] or {}) != cursor:
            raise BackfillMoved(f"backfill job {job_id!r} moved on in another attempt")
        outcome: Outcome = apply(cur, org_id, phase, records, linked, stages.mapping(cur, PROVIDER))
        done = int(locked["rows_done"])
        number = {r.id: done + n + 1 for n, r in enumerate(records)}  # the record's, in the job
        imports.record_errors(
            cur,
            org_id,
            job_id,
            [
                (number[n.remote_id], 0, n.field, n.reason, f"{n.object_type} {n.remote_id}")
                for n in outcome.notes
            ],
        )
        for record in records:
            deps.faults.check("crm.backfill.record", f"{job_id}:{phase}:{record.id}")
        counts = (outcome.created, outcome.updated + outcome.unchanged, outcome.held)
        jobs.checkpoint(cur, job_id, nxt or {"phase": "done", "after": None}, len(records), counts)
    return nxt or {"phase": "done", "after": None}


def _done(deps: FlowDeps, org_id: str, job_id: str) -> int:
    with deps.db.transaction(org_id) as cur:
        row = jobs.job(cur, job_id)
    return int(row["rows_done"]) if row else 0


def _view(deps: FlowDeps, org_id: str, job_id: str) -> dict[str, Any]:
    with deps.db.transaction(org_id) as cur:
        row = jobs.job(cur, job_id)
    assert row is not None
    return view(row)
