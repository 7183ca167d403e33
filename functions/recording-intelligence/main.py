"""AGT-006 Recording Intelligence: two-pass extraction over a stored transcript (Pub/Sub)."""

import functions_framework

from colony.runtime.deps import deps
from colony.runtime.edge import pubsub_handler


@functions_framework.cloud_event
@pubsub_handler("recording-intelligence")
def handle(event, event_id):
    from colony.flows.handlers import PUBSUB_HANDLERS

    return PUBSUB_HANDLERS["recording-intelligence"](deps(), event, event_id)
