"""Which flow handles each Pub/Sub-triggered function's events (used by the adapters,
the inline test transport and the benchmarks)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from colony.flows import content
from colony.flows.campaigns import campaign, enrichment, message_generator, qualification
from colony.flows.deps import FlowDeps
from colony.flows.pipeline import onboarding
from colony.flows.recordings import follow_up, recording

Handler = Callable[[FlowDeps, Any, str], dict[str, Any]]


PUBSUB_HANDLERS: dict[str, Handler] = {
    "campaign": campaign.campaign_event,  # AGT-002
    "enrichment": enrichment.enrich,  # AGT-003
    "qualification": qualification.qualify,  # AGT-004
    "message-generator": message_generator.write_message,  # AGT-005
    "recording-intelligence": recording.analyse_event,  # AGT-006 (issue 6)
    "follow-up": follow_up.follow_up_event,  # AGT-007 (issue 6)
    "content": content.content_event,  # AGT-008 (issue 7)
    "onboarding": onboarding.onboarding_event,  # AGT-009 (issue 7)
}
