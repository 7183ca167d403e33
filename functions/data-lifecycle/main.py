"""Erasure jobs (the Cloud Tasks target of the erasure queue), the daily retention run and
the Drive channel renewal (Cloud Scheduler targets, one job per org); OIDC-verified in
production.

Body: ``{"task": {"kind": "erasure", "job_id": ...}}``,
``{"task": {"kind": "retention", "org_id": ...}}`` or
``{"task": {"kind": "drive.renew", "org_id": ...}}``,
``{"task": {"kind": "import", "org_id": ..., "job_id": ...}}`` (an import job, resumed from
its checkpoint on every attempt), or ``{"task": {"kind": "kc.tier", "org_id": ...}}`` (the
org's Knowledge Core moved to its own partition; idempotent). A failed erasure attempt raises, so
Cloud Tasks retries it, and the retry resumes after the last finished phase.
"""

from __future__ import annotations

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
    # lazy: the flows, their task model, OIDC (PyJWT) and Drive load on the first request
    from colony.adapters.drive import drive_from_settings
    from colony.contracts.lifecycle import (
        DriveRenewal,
        ErasureTask,
        ImportTask,
        KcTierTask,
        LifecycleBody,
    )
    from colony.flows import drive_channels, erasure, imports, kc_tiering, retention
    from colony.runtime.auth import verify_google_oidc
    from colony.runtime.notion_clients import secret_store

    global _drive
    d = deps(parts)
    verify_google_oidc(
        request.authorization, d.settings.function_urls.get("data-lifecycle", ""), d.settings
    )
    task = request.parse(LifecycleBody).task
    if _drive is None:
        _drive = drive_from_settings(d.settings)  # its token is fetched on the first call
    if isinstance(task, ErasureTask):
        connections = erasure.OrgConnections(_drive, secret_store(d.settings))
        return erasure.run_job(d, task.job_id, traces(d.settings), connections)
    if isinstance(task, DriveRenewal):
        return drive_channels.renew(d, _drive, task.org_id)
    if isinstance(task, ImportTask):
        return imports.run_job(d, task.org_id, task.job_id)
    if isinstance(task, KcTierTask):
        return kc_tiering.run(d, task.org_id)
    return {**retention.enforce(d, task.org_id), "kc_tier": kc_tiering.check(d, task.org_id)}
