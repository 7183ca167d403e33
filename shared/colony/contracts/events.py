"""Events carried by Pub/Sub and Cloud Tasks between functions (the message ``data``).

The org travels inside the event because the publisher is one of our own functions (pushes
are OIDC-authenticated in production); user-facing requests never take an org from a body.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, TypeAdapter

from colony.contracts.common import Strict
from colony.contracts.envelope import HandoffEnvelope

_ID = Field(min_length=1, max_length=200)


class CampaignStart(Strict):
    kind: Literal["campaign.start"] = "campaign.start"
    org_id: str = _ID
    campaign_id: str = _ID
    run_id: str = _ID


class CampaignResume(Strict):
    """Re-activate a paused campaign and its paused runs (or just ``run_id`` of them)."""

    kind: Literal["campaign.resume"] = "campaign.resume"
    org_id: str = _ID
    campaign_id: str = _ID
    run_id: str | None = Field(default=None, min_length=1, max_length=200)


class Handoff(Strict):
    """Work for one specialist agent on the entities in its envelope."""

    kind: Literal["handoff"] = "handoff"
    org_id: str = _ID
    campaign_id: str = _ID
    envelope: HandoffEnvelope


class ContactDone(Strict):
    """A contact's chain has ended (message queued, not qualified, or disqualified)."""

    kind: Literal["contact.done"] = "contact.done"
    org_id: str = _ID
    run_id: str = _ID
    contact_id: str = _ID
    outcome: Literal["message_queued", "not_qualified", "anti_icp", "missing_data"]


Event = Annotated[
    CampaignStart | CampaignResume | Handoff | ContactDone, Field(discriminator="kind")
]
EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)
