"""AGT-007 Post-Call Follow-up: a follow-up draft into the approval queue (Pub/Sub)."""

import functions_framework

from colony.runtime.deps import deps
from colony.runtime.edge import pubsub_handler


@functions_framework.cloud_event
@pubsub_handler("follow-up")
def handle(event, event_id):
    from colony.flows.handlers import PUBSUB_HANDLERS

    return PUBSUB_HANDLERS["follow-up"](deps(), event, event_id)
