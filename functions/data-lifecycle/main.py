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
- ``replies.poll``: read the deployment's reply mailbox once, and the inbound mail events held
  while no reader of received mail was configured (``colony.flows.outbound.held_mail``).
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

_drive: HttpDrive | None = None


@functions_framework.http
@http_json
def handle(request: JsonRequest) -> dict[str, Any]:
    # lazy: the flows, their task model, OIDC (PyJWT), Drive and IMAP load on the first request
    from colony.adapters.drive import drive_from_settings
    from colony.adapters.imap_mailbox import mailbox_from_settings
    from colony.contracts.lifecycle import (
        DriveRenewal,
        ErasureTask,
        ImportTask,
        KcTierTask,
        LifecycleBody,
        RepliesPoll,
        ScheduleRun,
    )
    from colony.flows.knowledge import kc_tiering
    from colony.flows.outbound import held_mail, replies
    from colony.flows.recordings import drive_channels
    from colony.flows.tenants import erasure, imports, retention, schedules
    from colony.runtime.auth import verify_google_oidc
    from colony.runtime.notion_clients import secret_store

    global _drive
    d = deps(parts)
    verify_google_oidc(
        request.authorization, d.settings.function_urls.get("data-lifecycle", ""), d.settings
    )
    task = request.parse(LifecycleBody).task
    if isinstance(task, ScheduleRun):
        scheduled = request.headers.get("X-CloudScheduler-ScheduleTime")
        return schedules.run(d, task, scheduled=scheduled)
    if isinstance(task, RepliesPoll):
        held = held_mail.drain(d, d.rejections)
        mailbox = mailbox_from_settings(d.settings)
        if mailbox is None:
            reason = "no reply mailbox (COLONY_REPLY_MAILBOX_HOST)"
            return {"status": "skipped", "reason": reason, "held": held}
        return {"status": "polled", **replies.poll(d, d.rejections, mailbox), "held": held}
    if isinstance(task, ImportTask):
        return imports.run_job(d, task.org_id, task.job_id)
    if isinstance(task, KcTierTask):
        return kc_tiering.run(d, task.org_id)
    if _drive is None:
        _drive = drive_from_settings(d.settings)  # its token is fetched on the first call
    if isinstance(task, ErasureTask):
        stop_channels = partial(drive_channels.stop_org, d, _drive)
        connections = erasure.OrgConnections(stop_channels, secret_store(d.settings))
        return erasure.run_job(d, task.job_id, traces(d.settings), connections)
    if isinstance(task, DriveRenewal):
        return drive_channels.renew(d, _drive, task.org_id)
    return {**retention.enforce(d, task.org_id), "kc_tier": kc_tiering.check(d, task.org_id)}
