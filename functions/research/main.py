"""Research one company for one org (issue 33): the Cloud Tasks target of the research
queue (OIDC-verified in production). A task names the org, the company's domain and the pass;
the flow (``colony.flows.research``) fetches what it can now, keeps each source with its
provenance, and schedules the same task again when a site's pace holds it back.
"""

from __future__ import annotations

from typing import Any

import functions_framework

from colony.runtime.compose.research import parts
from colony.runtime.deps import deps
from colony.runtime.edge import JsonRequest, http_json
from colony.runtime.edge.invoker import invoker_only


@functions_framework.http
@http_json(caller=invoker_only("research"))  # Cloud Tasks, by OIDC
def handle(request: JsonRequest) -> dict[str, Any]:
    # lazy: the flow, the readers and the fetcher load on the first request
    from colony.contracts.research import ResearchTask
    from colony.flows.research.runner import run

    task = request.parse(ResearchTask)
    return run(deps(parts), task.org_id, task.domain, task.pass_no)
