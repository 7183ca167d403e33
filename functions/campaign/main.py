"""AGT-002 Campaign Orchestrator: campaign start and resume events from Pub/Sub."""

import functions_framework

from colony.runtime.deps import deps
from colony.runtime.edge import pubsub_handler


@functions_framework.cloud_event
@pubsub_handler("campaign")
def handle(event, event_id):
    from colony.flows.handlers import PUBSUB_HANDLERS

    return PUBSUB_HANDLERS["campaign"](deps(), event, event_id)
