"""Events carried by Pub/Sub and Cloud Tasks between functions (the message ``data``).

The org travels inside the event because the publisher is one of our own functions (pushes
are OIDC-authenticated in production); user-facing requests never take an org from a body.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, RootModel, TypeAdapter

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


class SendMessage(Strict):
    """Send one approved outbox message (``colony.flows.outbound.sending``); the send task's
    body."""

    kind: Literal["outbox.send"] = "outbox.send"
    org_id: str = _ID
    outbox_id: str = _ID


class SequenceStep(Strict):
    """Draft step ``step`` (2 or later) of a contact's sequence: the Cloud Tasks task scheduled
    when step ``step - 1`` was sent (its delay later), and the event it hands AGT-005."""

    kind: Literal["sequence.step"] = "sequence.step"
    org_id: str = _ID
    campaign_id: str = _ID
    contact_id: str = _ID
    step: int = Field(ge=2, le=50)


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


# -- knowledge pipelines (issue 6) -------------------------------------------------------------


class RecordingReceived(Strict):
    """The Drive webhook stored a transcript and created its ENT-006 row: run AGT-006."""

    kind: Literal["recording.received"] = "recording.received"
    org_id: str = _ID
    recording_id: str = _ID


class RecordingProcessed(Strict):
    """AGT-006 finished a recording (signals and summary written): run AGT-007."""

    kind: Literal["recording.processed"] = "recording.processed"
    org_id: str = _ID
    recording_id: str = _ID


NotionDomain = Literal["KC-01", "KC-02", "KC-03", "KC-04", "KC-05", "KC-06", "KC-07"]


class NotionReembed(Strict):
    """The Cloud Tasks body of one re-embed job: sync one Notion page into its KC domain.

    Not a Pub/Sub event (not in ``Event``); the webhook resolved the org from its
    configuration, so the worker trusts only its OIDC-verified caller, never a user.
    ``domain`` is what the event's parent mapped to (None: unmapped, e.g. the page moved out
    of a mapped database); the worker maps the page by its parent as it is NOW, so a page
    that moved is moved or removed, whatever the event said.
    """

    kind: Literal["notion.reembed"] = "notion.reembed"
    org_id: str = _ID
    workspace_id: str = Field(min_length=1, max_length=100)
    page_id: str = Field(min_length=1, max_length=64)
    domain: NotionDomain | None = None
    edited_time: str = Field(min_length=1, max_length=64)


class NotionSyncStep(Strict):
    """The Cloud Tasks body of one step of a backfill or reconciliation run
    (``flows.knowledge.notion_backfill``): one page of one mapped database. ``step`` must be the
    run's current step (its checkpoint in ``notion_syncs``); any other is a stale duplicate."""

    kind: Literal["notion.sync"] = "notion.sync"
    org_id: str = _ID
    workspace_id: str = Field(min_length=1, max_length=100)
    sync_id: str = _ID
    step: int = Field(ge=0)


class NotionReconcile(Strict):
    """One org's share of the daily ``notion-reconcile`` schedule (a Cloud Tasks body, from
    ``colony.flows.tenants.schedules``): start the day's reconciliation run of each of the org's
    connected workspaces."""

    kind: Literal["notion.reconcile"] = "notion.reconcile"
    org_id: str = _ID


class Redeliver(Strict):
    """The Cloud Tasks body that puts ``event`` back on ``topic`` once the model provider's
    ``Retry-After`` has passed (``colony.runtime.redelivery``); not itself an ``Event``."""

    kind: Literal["redeliver"] = "redeliver"
    org_id: str = _ID
    topic: str = Field(min_length=1, max_length=100)
    event: dict[str, Any]


class BudgetRelease(Strict):
    """The Cloud Tasks body that publishes again the campaign work an org's spent budget held
    (``colony.flows.tenants.budget.release``), once the budget allows: queued when an admin
    changes the budget, and by the daily ``budget-release`` schedule (the month turning).
    ``run`` names one release, ``after`` the last hold its previous page published."""

    kind: Literal["budget.release"] = "budget.release"
    org_id: str = _ID
    run: str = Field(default="now", min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")
    after: int | None = Field(default=None, ge=0)


class BriefRequest(Strict):
    """The daily-brief function's body (one org's share of the ``daily-brief`` schedule, from
    ``colony.flows.tenants.schedules``): which org, and which day (default: today, UTC)."""

    org_id: str = _ID
    brief_date: date | None = None


NotionTask = Annotated[
    NotionReembed | NotionSyncStep | NotionReconcile, Field(discriminator="kind")
]


class NotionTaskBody(RootModel[NotionTask]):
    """What the re-embed worker accepts: one of the three, told apart by ``kind``."""


class ContentRequest(Strict):
    """Ask AGT-008 for one content piece (the orchestrator's tool); ``request_id`` keys it, so
    a redelivered or repeated request never queues a second piece."""

    kind: Literal["content.request"] = "content.request"
    org_id: str = _ID
    request_id: str = _ID
    topic: str = Field(min_length=3, max_length=300)
    format: Literal["linkedin_post", "blog_post", "one_pager", "email_newsletter"]


class DealClosedWon(Strict):
    """A deal moved to closed_won (an approved deal update): AGT-009 builds its kit."""

    kind: Literal["deal.closed_won"] = "deal.closed_won"
    org_id: str = _ID
    deal_id: str = _ID


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
