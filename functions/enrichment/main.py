"""AGT-003 Prospect Enrichment: handoff envelopes from Pub/Sub."""

import functions_framework

from colony.runtime.deps import deps
from colony.runtime.edge import pubsub_handler


@functions_framework.cloud_event
@pubsub_handler("enrichment")
def handle(event, event_id):
    from colony.flows.handlers import PUBSUB_HANDLERS

    return PUBSUB_HANDLERS["enrichment"](deps(), event, event_id)
