"""AGT-002 Campaign Orchestrator: campaign start and resume events from Pub/Sub."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import functions_framework

from colony.runtime.deps import deps
from colony.runtime.edge import pubsub_handler

if TYPE_CHECKING:
    from colony.contracts.events import Event


@functions_framework.cloud_event
@pubsub_handler("campaign")
def handle(event: Event, event_id: str) -> dict[str, Any]:
    # lazy: the flow loads on the first request, not at cold start
    from colony.flows.campaigns.campaign import campaign_event

    return campaign_event(deps(), event, event_id)
