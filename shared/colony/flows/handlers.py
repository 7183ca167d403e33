"""Which flow handles each Pub/Sub-triggered function's events (used by the adapters,
the inline test transport and the benchmarks)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from colony.contracts.events import CampaignResume, CampaignStart, Handoff
from colony.errors import ValidationFailed
from colony.flows import campaign, content, onboarding, recording
from colony.flows.deps import FlowDeps

Handler = Callable[[FlowDeps, Any, str], dict[str, Any]]


def campaign_event(deps: FlowDeps, event: Any, event_id: str) -> dict[str, Any]:
    if isinstance(event, CampaignStart):
        return campaign.start(deps, event, event_id)
    if isinstance(event, CampaignResume):
        return campaign.resume(deps, event, event_id)
    raise ValidationFailed(f"the campaign function does not take {type(event).__name__} events")


def _handoff(work: Handler) -> Handler:
    def handle(deps: FlowDeps, event: Any, event_id: str) -> dict[str, Any]:
        if not isinstance(event, Handoff):
            raise ValidationFailed(f"expected a handoff, got {type(event).__name__}")
        return work(deps, event, event_id)

    return handle


PUBSUB_HANDLERS: dict[str, Handler] = {
    "campaign": campaign_event,
    "enrichment": _handoff(campaign.enrich),
    "qualification": _handoff(campaign.qualify),
    "message-generator": _handoff(campaign.write_message),
    "recording-intelligence": recording.analyse_event,  # AGT-006 (issue 6)
    "follow-up": recording.follow_up_event,  # AGT-007 (issue 6)
    "content": content.content_event,  # AGT-008 (issue 7)
    "onboarding": onboarding.onboarding_event,  # AGT-009 (issue 7)
}
