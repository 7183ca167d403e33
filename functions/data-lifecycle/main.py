"""The data lifecycle's Cloud Tasks and Cloud Scheduler target (OIDC-verified in production).

Body: ``{"task": {"kind": ..., ...}}`` (``colony.contracts.lifecycle.LifecycleBody``):
- ``erasure`` (``job_id``): run or resume one erasure job; a failed attempt raises, so Cloud
  Tasks retries it, and the retry resumes after the last finished phase;
- ``import`` (``org_id``, ``job_id``): run an import job, resumed from its checkpoint;
- ``kc.tier`` (``org_id``): move the org's Knowledge Core to its own partition (idempotent);
- ``schedule`` (``name``): what every Cloud Scheduler job posts: fan the schedule out to the
  orgs it serves, one task each (``colony.flows.tenants.schedules``);
- ``retention`` / ``drive.renew`` (``org_id``): one org's share of those schedules (the
  retention run also checks whether the org outgrew the shared Knowledge Core partition);
- ``research.sweep`` (``org_id``): the org's research passes whose tasks were lost, each
  handed to a new research task (``colony.flows.research.requests.wake_stalled``);
- ``replies.poll``: read the deployment's reply mailbox once, and the inbound mail events held
  while no reader of received mail was configured (``colony.flows.outbound.held_mail``);
- ``domains.check`` (``org_id``): the org's sending domains checked again in DNS; one that
  broke is paused (``colony.flows.outbound.sending_domains``);
- ``approvals.escalate`` (``org_id``): the org's approval items undecided past its window
  handed to its backup (``colony.flows.approvals.escalation``).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

import functions_framework

from colony.runtime.compose.lifecycle import parts, traces
from colony.runtime.deps import deps
from colony.runtime.edge import JsonRequest, http_json

if TYPE_CHECKING:
    from colony.adapters.drive import HttpDrive
    from colony.contracts.lifecycle import DriveRenewal, ErasureTask
    from colony.runtime.deps import Deps

_drive: HttpDrive | None = None


@functions_framework.http
@http_json
def handle(request: JsonRequest) -> dict[str, Any]:
    # lazy: the task model and OIDC (RSA) load on the first request; each task's flow and
    # clients (Drive and Notion over httpx, IMAP) with the first task of its kind
    from colony.contracts.lifecycle import (
        DomainCheck,
        DriveRenewal,
        ErasureTask,
        EscalationRun,
        ImportTask,
        KcTierTask,
        LifecycleBody,
        RepliesPoll,
        ResearchSweep,
        ScheduleRun,
    )
    from colony.runtime.auth import verify_google_oidc

    d = deps(parts)
    verify_google_oidc(
        request.authorization, d.settings.function_urls.get("data-lifecycle", ""), d.settings
    )
    task = request.parse(LifecycleBody).task
    if isinstance(task, ScheduleRun):
        from colony.flows.tenants import schedules  # lazy: (as above)

        scheduled = request.headers.get("X-CloudScheduler-ScheduleTime")
        return schedules.run(d, task, scheduled=scheduled)
    if isinstance(task, RepliesPoll):
        # lazy: (as above)
        from colony.adapters.imap_mailbox import mailbox_from_settings
        from colony.flows.outbound import held_mail, replies

        held = held_mail.drain(d, d.rejections)
        mailbox = mailbox_from_settings(d.settings)
        if mailbox is None:
            reason = "no reply mailbox (COLONY_REPLY_MAILBOX_HOST)"
            return {"status": "skipped", "reason": reason, "held": held}
        return {"status": "polled", **replies.poll(d, d.rejections, mailbox), "held": held}
    if isinstance(task, ResearchSweep):
        from colony.flows.research import requests  # lazy: (as above)

        return requests.wake_stalled(d, task.org_id)
    if isinstance(task, DomainCheck):
        # lazy: (as above)
        from colony.adapters.dns import resolver_from_settings
        from colony.flows.outbound import sending_domains

        return sending_domains.recheck(d, resolver_from_settings(d.settings), task.org_id)
    if isinstance(task, EscalationRun):
        from colony.flows.approvals import escalation  # lazy: (as above)

        return escalation.escalate(d, task.org_id)
    if isinstance(task, ImportTask):
        from colony.flows.tenants import imports  # lazy: (as above)

        return imports.run_job(d, task.org_id, task.job_id)
    if isinstance(task, ErasureTask | DriveRenewal):
        return _with_drive(d, task)
    from colony.flows.knowledge import kc_tiering  # lazy: (as above)

    if isinstance(task, KcTierTask):
        return kc_tiering.run(d, task.org_id)
    from colony.flows.tenants import retention  # lazy: (as above)

    return {**retention.enforce(d, task.org_id), "kc_tier": kc_tiering.check(d, task.org_id)}


def _with_drive(d: Deps, task: ErasureTask | DriveRenewal) -> dict[str, Any]:
    """An erasure or a watch channel's renewal: both reach the org's Drive."""
    # lazy: the Drive client (httpx) and these flows load with the first task that needs them
    from colony.adapters.drive import drive_from_settings
    from colony.contracts.lifecycle import ErasureTask
    from colony.flows.recordings import drive_channels
    from colony.flows.tenants import erasure
    from colony.runtime.org_secrets import secret_store

    global _drive
    if _drive is None:
        _drive = drive_from_settings(d.settings)  # its token is fetched on the first call
    if isinstance(task, ErasureTask):
        stop_channels = partial(drive_channels.stop_org, d, _drive)
        connections = erasure.OrgConnections(stop_channels, secret_store(d.settings))
        return erasure.run_job(d, task.job_id, traces(d.settings), connections)
    return drive_channels.renew(d, _drive, task.org_id)
