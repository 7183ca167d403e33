"""The bodies of Cloud Tasks that are not Pub/Sub events: a send, a redelivery and a daily
brief's request. (``SequenceStep`` and ``CampaignResume`` are both: they stay with the events,
``colony.contracts.events``; the re-embed worker's three are ``colony.contracts.reembed``.)

Apart from the events so that a task function loads its own bodies and no event model.
"""

from __future__ import annotations

from datetime import date
from typing import Any, Literal

from pydantic import Field

from colony.contracts.common import ID, Strict


class SendMessage(Strict):
    """Send one approved outbox message (``colony.flows.outbound.sending``); the send task's
    body."""

    kind: Literal["outbox.send"] = "outbox.send"
    org_id: str = ID
    outbox_id: str = ID


class Redeliver(Strict):
    """The Cloud Tasks body that puts ``event`` back on ``topic`` once the model provider's
    ``Retry-After`` has passed (``colony.runtime.redelivery``); not itself an ``Event``."""

    kind: Literal["redeliver"] = "redeliver"
    org_id: str = ID
    topic: str = Field(min_length=1, max_length=100)
    event: dict[str, Any]


class BriefRequest(Strict):
    """The daily-brief function's body (one org's share of the ``daily-brief`` schedule, from
    ``colony.flows.tenants.schedules``): which org, and which day (default: today, UTC)."""

    org_id: str = ID
    brief_date: date | None = None
