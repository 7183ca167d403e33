"""Erasure jobs (the Cloud Tasks target of the erasure queue) and the daily retention run
(the Cloud Scheduler target, one job per org); OIDC-verified in production.

Body: ``{"task": {"kind": "erasure", "job_id": ...}}``,
``{"task": {"kind": "retention", "org_id": ...}}`` or
``{"task": {"kind": "import", "org_id": ..., "job_id": ...}}`` (an import job, resumed from
its checkpoint on every attempt). A failed erasure attempt raises, so Cloud
Tasks retries it, and the retry resumes after the last finished phase.
"""

from __future__ import annotations

from typing import Any

import functions_framework

from colony.runtime.compose.lifecycle import parts, traces
from colony.runtime.deps import deps
from colony.runtime.edge import JsonRequest, http_json


@functions_framework.http
@http_json
def handle(request: JsonRequest) -> dict[str, Any]:
    # lazy: the flows, their task model and OIDC (PyJWT) load on the first request
    from colony.contracts.lifecycle import ErasureTask, ImportTask, LifecycleBody
    from colony.flows import erasure, imports, retention
    from colony.runtime.auth import verify_google_oidc

    d = deps(parts)
    verify_google_oidc(
        request.authorization, d.settings.function_urls.get("data-lifecycle", ""), d.settings
    )
    task = request.parse(LifecycleBody).task
    if isinstance(task, ErasureTask):
        return erasure.run_job(d, task.job_id, traces(d.settings))
    if isinstance(task, ImportTask):
        return imports.run_job(d, task.org_id, task.job_id)
    return retention.enforce(d, task.org_id)
