"""Events carried by Pub/Sub between functions (the message ``data``): ``Event``, what a
Pub/Sub function decodes (``colony.runtime.edge.pubsub``). The bodies of Cloud Tasks that are
not events are ``colony.contracts.tasks``' (a task function loads no event model).

The org travels inside the event because the publisher is one of our own functions (pushes
are OIDC-authenticated in production); user-facing requests never take an org from a body.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, TypeAdapter

from colony.contracts.common import ID, Strict
from colony.contracts.envelope import HandoffEnvelope


class CampaignStart(Strict):
    kind: Literal["campaign.start"] = "campaign.start"
    org_id: str = ID
    campaign_id: str = ID
    run_id: str = ID


class CampaignResume(Strict):
    """Re-activate a paused campaign and its paused runs (or just ``run_id`` of them)."""

    kind: Literal["campaign.resume"] = "campaign.resume"
    org_id: str = ID
    campaign_id: str = ID
    run_id: str | None = Field(default=None, min_length=1, max_length=200)


class SequenceStep(Strict):
    """Draft step ``step`` (2 or later) of a contact's sequence: the Cloud Tasks task scheduled
    when step ``step - 1`` was sent (its delay later), and the event it hands AGT-005."""

    kind: Literal["sequence.step"] = "sequence.step"
    org_id: str = ID
    campaign_id: str = ID
    contact_id: str = ID
    step: int = Field(ge=2, le=50)


class Handoff(Strict):
    """Work for one specialist agent on the entities in its envelope."""

    kind: Literal["handoff"] = "handoff"
    org_id: str = ID
    campaign_id: str = ID
    envelope: HandoffEnvelope


class ContactDone(Strict):
    """A contact's chain has ended (message queued, not qualified, or disqualified)."""

    kind: Literal["contact.done"] = "contact.done"
    org_id: str = ID
    run_id: str = ID
    contact_id: str = ID
    outcome: Literal["message_queued", "not_qualified", "anti_icp", "missing_data"]


# -- knowledge pipelines (issue 6) -------------------------------------------------------------


class RecordingReceived(Strict):
    """The Drive webhook stored a transcript and created its ENT-006 row: run AGT-006."""

    kind: Literal["recording.received"] = "recording.received"
    org_id: str = ID
    recording_id: str = ID


class RecordingProcessed(Strict):
    """AGT-006 finished a recording (signals and summary written): run AGT-007."""

    kind: Literal["recording.processed"] = "recording.processed"
    org_id: str = ID
    recording_id: str = ID


class ContentRequest(Strict):
    """Ask AGT-008 for one content piece (the orchestrator's tool); ``request_id`` keys it, so
    a redelivered or repeated request never queues a second piece."""

    kind: Literal["content.request"] = "content.request"
    org_id: str = ID
    request_id: str = ID
    topic: str = Field(min_length=3, max_length=300)
    format: Literal["linkedin_post", "blog_post", "one_pager", "email_newsletter"]


class DealClosedWon(Strict):
    """A deal moved to closed_won (an approved deal update): AGT-009 builds its kit."""

    kind: Literal["deal.closed_won"] = "deal.closed_won"
    org_id: str = ID
    deal_id: str = ID


Event = Annotated[
    CampaignStart
    | CampaignResume
    | Handoff
    | SequenceStep
    | ContactDone
    | RecordingReceived
    | RecordingProcessed
    | ContentRequest
    | DealClosedWon,
    Field(discriminator="kind"),
]
# Built on its first validation: a function that only parses its own task body never builds it.
EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event, config=ConfigDict(defer_build=True))
