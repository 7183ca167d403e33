"""The chat says why a launch waits while the org's budget is spent and capped (issue 38
item 2): no one is asked to approve a launch that would be refused, and an approval that
comes after the budget ran out launches nothing; the model is handed the reason and says it.

Real parts: embedded PostgreSQL, the offline model (it calls ``launch_campaign`` when asked to
launch, and reports a failed tool's message), the approval flow and its appliers, the inline
transport (nothing may be published).
"""

from __future__ import annotations

from typing import Any

import pytest

from colony.flows.approvals import approval
from colony.flows.chat import create_session, run_turn
from colony.runtime.deps import Deps
from colony.store import fetch_all
from tests.conftest import PgDB
from tests.test_budget_cap import set_budget
from tests.test_cli_usage import spend
from tests.test_content_onboarding import make_deps

pytestmark = pytest.mark.covers("AGT-001", "ENT-008", "fn:chat")

ORG = "org_zoomprop_demo"
LAUNCH = "launch a campaign for the Signal angle, T1"


def rows(deps: Deps, sql: str, params: tuple = ()) -> list[dict[str, Any]]:
    with deps.db.transaction(ORG) as cur:
        return fetch_all(cur, sql, params)


def turn(deps: Deps, session: str, message: str) -> list[Any]:
    events: list[Any] = []
    run_turn(deps, ORG, "user_asker", session, message, sink=events.extend)
    return events


def answer(events: list[Any]) -> str:
    return "".join(e.data["text"] for e in events if e.type == "delta")


def test_the_chat_says_why_a_launch_waits_and_no_one_is_asked_to_approve_it(
    testdb: PgDB,
) -> None:
    deps = make_deps(testdb)
    set_budget(deps, monthly_usd=2)
    spend(deps.db, ORG, 2)
    session = create_session(deps, ORG, "user_asker")
    events = turn(deps, session, LAUNCH)
    kinds = [e.type for e in events]
    assert "approval_required" not in kinds and events[-1].data["status"] == "completed"
    [result] = [e.data for e in events if e.type == "tool_result"]
    assert result["name"] == "launch_campaign" and result["ok"] is False
    assert result["error"]["code"] == "budget_capped"
    assert "this month's budget is spent ($2.00 of $2.00" in result["error"]["message"]
    # the model was handed the reason and said it
    said = answer(events)
    assert "I could not run launch_campaign: campaign launch refused" in said
    assert "until an admin raises the budget or the month ends" in said
    assert rows(deps, "SELECT 1 FROM approval_items WHERE kind = 'tool_action'") == []
    assert rows(deps, "SELECT 1 FROM campaigns") == [] and not deps.transport.pending


def test_an_approval_that_comes_after_the_budget_ran_out_launches_nothing(
    testdb: PgDB,
) -> None:
    deps = make_deps(testdb)
    set_budget(deps, monthly_usd=2)
    session = create_session(deps, ORG, "user_asker")
    events = turn(deps, session, LAUNCH)
    assert events[-1].data["status"] == "paused"  # held for a person, the budget not spent
    card = next(e.data["approval"] for e in events if e.type == "approval_required")
    spend(deps.db, ORG, 3)
    decided = approval.decide(
        deps, ORG, card["id"], "approve", actor=approval.Actor("user_approver", "ui")
    )
    assert decided["status"] == "applied"
    sql = "SELECT data FROM chat_events WHERE session_id = %s AND type = %s ORDER BY seq"
    [result] = [r["data"] for r in rows(deps, sql, (session, "tool_result"))]
    assert result["ok"] is False and result["error"]["code"] == "budget_capped"
    assert "($3.00 of $2.00" in result["error"]["message"]
    said = "".join(r["data"]["text"] for r in rows(deps, sql, (session, "delta")))
    assert "campaign launch refused" in said
    assert rows(deps, "SELECT 1 FROM campaigns") == [] and not deps.transport.pending
