"""An org's monthly budget: where its spend stands, the campaign work held while the budget is
spent and capped, and that work's release (issue 38 item 2; docs/costs.md).

    a new step of a campaign (a specialist's handoff, a sequence's later step)
        ─► hold_if_capped: this month's spend ≥ the budget, and the budget a hard cap?
            ├─ no  ─► the step runs
            └─ yes ─► its event kept as delivered (``budget_holds``), the delivery acknowledged
    an admin changes the settings (``org_admin.replace_settings``) ─► release_soon
    the daily ``budget-release`` schedule (00:05 UTC: on the 1st, the month has turned)
        ─► a ``BudgetRelease`` task on colony-campaign-resume ─► release: if the budget allows
           now, each held event is published again on its topic, a page at a time

Only a step that has not started is held: one already claimed (running, or done and replayed)
goes on, so a contact mid-chain finishes its current step and nothing half-done is lost. The
cap is read before each new step, so a month can end over its budget by the steps that were
in flight when it was reached. A launch is refused outright (``check_launch``: ``BudgetCapped``,
whose sentence the chat's launch tool hands the model, so the chat says why). The chat, the
brief, recordings and content go on: the cap is on new campaign work. Calls of a model the
price table does not name cost nothing known, so they count towards no budget (the report
shows them as unpriced calls).

The alerts (the alert share reached, the whole budget reached) are recorded by the database
as the spend that reaches them is written (migration 0048's trigger), once per org, month
and kind, in ``budget_alerts``, to be delivered by a notification system when there is one
(issue 35); /overview's banner shows the standing meanwhile.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any, Literal

from colony.contracts.events import EVENT_ADAPTER
from colony.contracts.tasks import BudgetRelease
from colony.errors import BudgetCapped, ValidationFailed
from colony.flows.deps import FlowDeps
from colony.registry.functions import AGENT_TOPICS, CAMPAIGN_RESUME_QUEUE
from colony.runtime.transport import enqueue, publish
from colony.store.tenants import budget_holds, usage

PAGE = 200  # held events one release task publishes before it queues the next page
HELD_AGENTS = ("AGT-003", "AGT-004", "AGT-005")  # the campaign's specialists: what is held
State = Literal["none", "ok", "alert", "over", "capped"]


def money(value: Decimal | None) -> float | None:
    """USD as a JSON number, to the millionth of a dollar (a call can cost less than a cent)."""
    return None if value is None else round(float(value), 6)


@dataclass(frozen=True, slots=True)
class Standing:
    """This month's spend against the org's budget (UTC)."""

    month: date  # its first day
    monthly_usd: Decimal | None  # None: no budget
    alert_share: Decimal
    hard_cap: bool
    spent_usd: Decimal
    unpriced_calls: int
    held: int  # campaign steps waiting for the budget

    @property
    def state(self) -> State:
        """``none`` (no budget), ``ok``, ``alert`` (the alert share reached), ``over`` (the
        whole reached, no hard cap) or ``capped`` (the whole reached: campaign work waits)."""
        if self.monthly_usd is None:
            return "none"
        if self.spent_usd >= self.monthly_usd:
            return "capped" if self.hard_cap else "over"
        return "alert" if self.spent_usd >= self.monthly_usd * self.alert_share else "ok"

    def refusal(self) -> str | None:
        """Why new campaign work waits (None: it does not)."""
        if self.state != "capped":
            return None
        assert self.monthly_usd is not None
        turn = _next_month(self.month)
        return (
            f"this month's budget is spent (${self.spent_usd:,.2f} of ${self.monthly_usd:,.2f}"
            f" in {self.month:%B %Y}, UTC) and it is a hard cap, so new campaign work waits"
            f" until an admin raises the budget or the month ends ({turn:%B} 1, 00:00 UTC);"
            " work already started finishes"
        )

    def as_dict(self) -> dict[str, Any]:
        budget = self.monthly_usd
        return {
            "month": f"{self.month:%Y-%m}",
            "monthly_usd": money(budget),
            "alert_share": float(self.alert_share),
            "hard_cap": self.hard_cap,
            "spent_usd": money(self.spent_usd),
            "share": None if budget is None else round(float(self.spent_usd / budget), 4),
            "state": self.state,
            "unpriced_calls": self.unpriced_calls,
            "held": self.held,
            "reason": self.refusal(),
        }


def _next_month(month: date) -> date:
    return date(month.year + month.month // 12, month.month % 12 + 1, 1)


def standing_in(cur: Any) -> Standing:
    """The org's standing, read on ``cur`` (a transaction of the org)."""
    row = usage.standing(cur)
    return Standing(
        row["month"],
        row["budget_monthly_usd"],
        Decimal(row["alert_share"]),
        bool(row["hard_cap"]),
        Decimal(row["spent_usd"]),
        int(row["unpriced_calls"]),
        int(row["held"]),
    )


def standing(deps: FlowDeps, org_id: str) -> Standing:
    with deps.db.transaction(org_id) as cur:
        return standing_in(cur)


def check_launch(deps: FlowDeps, org_id: str) -> None:
    """Refuse a campaign launch while the budget holds campaign work back."""
    reason = standing(deps, org_id).refusal()
    if reason is not None:
        raise BudgetCapped(f"campaign launch refused: {reason}")


def hold_if_capped(
    cur: Any,
    org_id: str,
    *,
    run_id: str,
    step_key: str,
    campaign_id: str,
    topic: str,
    event: Mapping[str, Any],
) -> str | None:
    """Hold ``event``, the one that would start step ``step_key`` of ``run_id``, if the budget
    holds campaign work back now: the reason it waits, or None (it may run). On the caller's
    cursor, so the hold commits with whatever else the caller records."""
    reason = standing_in(cur).refusal()
    if reason is not None:
        budget_holds.hold(cur, org_id, run_id, step_key, campaign_id, topic, event)
    return reason


def release_soon(deps: FlowDeps, org_id: str) -> bool:
    """Queue a release of the org's held work if there is some and the budget allows it now
    (after an admin changed the budget); whether one was queued."""
    now = standing(deps, org_id)
    if not now.held or now.refusal() is not None:
        return False
    task = BudgetRelease(org_id=org_id, run=uuid.uuid4().hex[:16])
    enqueue(
        deps.transport,
        CAMPAIGN_RESUME_QUEUE,
        task,
        task_id=f"budget-release-{org_id}-{task.run}",
        delay_seconds=0,
    )
    return True


def release(deps: FlowDeps, task: BudgetRelease) -> dict[str, Any]:
    """Publish one page of the org's held work again, if its budget allows it now, and queue
    the next page when this one was full.

    Each event is published before its hold is marked released, so a release that fails
    half-way publishes the rest again on its retry: a step published twice runs once (the
    handlers are idempotent and each step is durable). Two releases at once do the same."""
    org = task.org_id
    with deps.db.transaction(org) as cur:
        reason = standing_in(cur).refusal()
        page = [] if reason is not None else budget_holds.waiting(cur, task.after or 0, PAGE)
    if reason is not None:
        return {"released": 0, "waiting": reason}
    topics = {AGENT_TOPICS[agent] for agent in HELD_AGENTS}
    for row in page:
        event = EVENT_ADAPTER.validate_python(row["event"])
        if row["topic"] not in topics or event.org_id != org:
            raise ValidationFailed(f"hold {row['id']} is not this org's work for an agent")
        publish(deps.transport, str(row["topic"]), event)
    with deps.db.transaction(org) as cur:
        budget_holds.released(cur, [int(r["id"]) for r in page])
    after = int(page[-1]["id"]) if len(page) == PAGE else None
    if after is not None:
        more = task.model_copy(update={"after": after})
        name = f"budget-release-{org}-{task.run}-after-{after}"
        enqueue(deps.transport, CAMPAIGN_RESUME_QUEUE, more, task_id=name, delay_seconds=0)
    return {"released": len(page), "next_page": after}
