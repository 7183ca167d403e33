"""A schedule's fan-out: from one Cloud Scheduler job to one task per org it serves.

    Cloud Scheduler ─► data-lifecycle {"task": {"kind": "schedule", "name": N}}
        ─► a page of org ids (store.tenants.schedules) ─► one task per org on N's queue
        ─► the next page's fan-out, as a task of its own, while pages are full

Each task is named by the schedule, the run's slot (the time Cloud Scheduler scheduled it,
``X-CloudScheduler-ScheduleTime``) and the org, so a retried Scheduler call or a redelivered
page creates no task twice, and tomorrow's run creates tomorrow's. One request enqueues at
most ``PAGE`` tasks, so the run's length does not grow with the number of orgs: 10,000 orgs
are 20 short requests rather than one that outlives its timeout.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

from colony.contracts.common import Strict
from colony.contracts.crm_tasks import CrmReconcile, CrmTaskBody
from colony.contracts.lifecycle import (
    DomainCheck,
    DriveRenewal,
    EscalationRun,
    LifecycleBody,
    RepliesPoll,
    ResearchSweep,
    RetentionRun,
    ScheduleRun,
)
from colony.contracts.reembed import NotionReconcile
from colony.contracts.tasks import BriefRequest, BudgetRelease, NotifyRun
from colony.errors import ValidationFailed
from colony.flows.deps import FlowDeps
from colony.registry.functions import LIFECYCLE_QUEUE
from colony.registry.schedules import schedule
from colony.runtime.transport import enqueue
from colony.store.tenants import schedules

PAGE = 500  # tasks one fan-out request creates; Cloud Tasks takes ~20-50 ms for each


def slot_of(scheduled: str | None, now: datetime) -> datetime:
    """The run's slot: Cloud Scheduler's own time for this run (the same on its retries);
    without it (a person's manual run), the current minute."""
    if scheduled:
        try:
            at = datetime.fromisoformat(scheduled.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValidationFailed(
                "X-CloudScheduler-ScheduleTime is not an RFC 3339 time"
            ) from None
        if at.tzinfo is None:
            raise ValidationFailed("X-CloudScheduler-ScheduleTime has no time zone")
        return at.astimezone(UTC).replace(microsecond=0)
    return now.astimezone(UTC).replace(second=0, microsecond=0)


def _org_task(name: str, org_id: str, slot: datetime, day: date | None = None) -> Strict:
    if name == "daily-brief":
        return BriefRequest(org_id=org_id, brief_date=day)  # the org's local day
    if name == "approval-escalation":
        return LifecycleBody(task=EscalationRun(org_id=org_id))
    if name == "retention":
        return LifecycleBody(task=RetentionRun(org_id=org_id))
    if name == "drive-renew":
        return LifecycleBody(task=DriveRenewal(org_id=org_id))
    if name == "notion-reconcile":
        return NotionReconcile(org_id=org_id)
    if name == "research-sweep":
        return LifecycleBody(task=ResearchSweep(org_id=org_id))
    if name == "crm-reconcile":
        return CrmTaskBody(task=CrmReconcile(org_id=org_id))
    if name == "domain-check":
        return LifecycleBody(task=DomainCheck(org_id=org_id))
    if name == "budget-release":
        return BudgetRelease(org_id=org_id, run=slot.strftime("%Y%m%dT%H%M"))
    if name == "notify":
        return NotifyRun(org_id=org_id, run=slot.strftime("%Y%m%dT%H%M"))
    raise ValidationFailed(f"schedule {name!r} has no per-org task")


def run(deps: FlowDeps, request: ScheduleRun, *, scheduled: str | None = None) -> dict[str, Any]:
    """Enqueue one page of the schedule's tasks and, when the page was full, the next page.

    ``scheduled``: the ``X-CloudScheduler-ScheduleTime`` header (None when the run did not
    come from Cloud Scheduler); a continuation page carries its run's slot instead."""
    spec = schedule(request.name)
    slot = request.slot or slot_of(scheduled, deps.clock())
    stamp = slot.strftime("%Y%m%dT%H%M")
    if spec.serves == "deployment":
        task_id = f"{spec.name}-{stamp}"
        body = LifecycleBody(task=RepliesPoll())
        enqueue(deps.transport, spec.queue, body, task_id=task_id, delay_seconds=0)
        return {"schedule": spec.name, "slot": slot.isoformat(), "enqueued": 1, "next_page": None}
    with deps.db.transaction(None) as cur:
        due: list[tuple[str, date | None]]
        if spec.serves == "brief_due":  # due at the slot, in each org's own time zone
            due = list(schedules.brief_due_page(cur, request.after, PAGE, slot))
        else:
            due = [
                (org_id, None)
                for org_id in schedules.org_page(cur, spec.serves, request.after, PAGE)
            ]
    orgs = [org_id for org_id, _ in due]
    for org_id, day in due:
        task = _org_task(spec.name, org_id, slot, day)
        task_id = f"{spec.name}-{stamp}-{org_id}"
        enqueue(deps.transport, spec.queue, task, task_id=task_id, delay_seconds=0)
    after = orgs[-1] if len(orgs) == PAGE else None
    if after is not None:
        page = ScheduleRun(name=request.name, slot=slot, after=after)
        task_id = f"schedule-{spec.name}-{stamp}-after-{after}"
        enqueue(
            deps.transport,
            LIFECYCLE_QUEUE,
            LifecycleBody(task=page),
            task_id=task_id,
            delay_seconds=0,
        )
    return {
        "schedule": spec.name,
        "slot": slot.isoformat(),
        "enqueued": len(orgs),
        "next_page": after,
    }
