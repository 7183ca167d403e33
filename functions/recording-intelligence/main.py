"""AGT-006 Recording Intelligence: two-pass extraction over a stored transcript (Pub/Sub)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import functions_framework

from colony.runtime.compose.model_assets import parts
from colony.runtime.deps import deps
from colony.runtime.edge import pubsub_handler

if TYPE_CHECKING:
    from colony.contracts.events import Event


@functions_framework.cloud_event
@pubsub_handler("recording-intelligence")
def handle(event: Event, event_id: str) -> dict[str, Any]:
    # lazy: the flow loads on the first request, not at cold start
    from colony.flows.recordings.recording import analyse_event

    return analyse_event(deps(parts), event, event_id)
