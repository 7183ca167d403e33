"""AGT-007 Post-Call Follow-up: a follow-up draft into the approval queue (Pub/Sub)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import functions_framework

from colony.runtime.compose.model import parts
from colony.runtime.deps import deps
from colony.runtime.edge import pubsub_handler

if TYPE_CHECKING:
    from colony.contracts.events import Event


@functions_framework.cloud_event
@pubsub_handler("follow-up")
def handle(event: Event, event_id: str) -> dict[str, Any]:
    # lazy: the flow loads on the first request, not at cold start
    from colony.flows.recordings.follow_up import follow_up_event

    return follow_up_event(deps(parts), event, event_id)
