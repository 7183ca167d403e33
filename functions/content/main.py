"""AGT-008 Content: content requests from Pub/Sub (the orchestrator's tool)."""

import functions_framework

from colony.runtime.deps import deps
from colony.runtime.edge import pubsub_handler


@functions_framework.cloud_event
@pubsub_handler("content")
def handle(event, event_id):
    from colony.flows.handlers import PUBSUB_HANDLERS

    return PUBSUB_HANDLERS["content"](deps(), event, event_id)
