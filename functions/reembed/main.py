"""Cloud Tasks target: re-embed one Notion page into its KC domain (OIDC in production)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import functions_framework

from colony.runtime.compose.knowledge import parts
from colony.runtime.deps import deps
from colony.runtime.edge import JsonRequest, http_json
from colony.runtime.edge.invoker import invoker_only

if TYPE_CHECKING:
    from colony.ports import NotionClient

_notion: NotionClient | None = None


@functions_framework.http
@http_json(caller=invoker_only("reembed"))  # Cloud Tasks / Scheduler, by OIDC
def handle(request: JsonRequest) -> dict[str, Any]:
    # lazy: the Notion client (httpx) and the flow load on the first request
    from colony.adapters.notion import notion_from_settings
    from colony.contracts.events import NotionReembed
    from colony.flows.notion_reembed import reembed

    global _notion
    d = deps(parts)
    job = request.parse(NotionReembed)
    if _notion is None:
        _notion = notion_from_settings(d.settings)
    return reembed(d, job, _notion)
