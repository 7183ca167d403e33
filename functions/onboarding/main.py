"""AGT-009 Onboarding: a deployment kit (GCS + signed URL) for each deal that closed won."""

import functions_framework

from colony.runtime.deps import deps
from colony.runtime.edge import pubsub_handler


@functions_framework.cloud_event
@pubsub_handler("onboarding")
def handle(event, event_id):
    from colony.flows.handlers import PUBSUB_HANDLERS

    return PUBSUB_HANDLERS["onboarding"](deps(), event, event_id)
