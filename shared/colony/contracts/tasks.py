"""The bodies of Cloud Tasks that are not Pub/Sub events: a send, a redelivery, a budget's
release and a daily brief's request. (``SequenceStep`` and ``CampaignResume`` are both: they
stay with the events, ``colony.contracts.events``; the re-embed worker's three are
``colony.contracts.reembed``; the crm function's are ``colony.contracts.crm_tasks``.)

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


class NotifyRun(Strict):
    """One org's turn of the ``notify`` schedule (``colony.flows.notifications.run``): the
    brief when due, events fanned out, due notifications sent; on the send queue, whose
    function holds the mail sender and the secret store. ``run`` names the minute."""

    kind: Literal["notify.run"] = "notify.run"
    org_id: str = ID
    run: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")


class BudgetRelease(Strict):
    """The Cloud Tasks body that publishes again the campaign work an org's spent budget held
    (``colony.flows.tenants.budget.release``), once the budget allows: queued when an admin
    changes the budget, and by the daily ``budget-release`` schedule (the month turning).
    ``run`` names one release, ``after`` the last hold its previous page published."""

    kind: Literal["budget.release"] = "budget.release"
    org_id: str = ID
    run: str = Field(default="now", min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")
    after: int | None = Field(default=None, ge=0)


class BriefRequest(Strict):
    """The daily-brief function's body (one org's share of the ``daily-brief`` schedule, from
    ``colony.flows.tenants.schedules``): which org, and which day (default: today, UTC)."""

    org_id: str = ID
    brief_date: date | None = None
