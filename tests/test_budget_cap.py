"""An org's monthly budget over the real campaign chain (issue 38 item 2): the alerts recorded
once per month, new campaign work held while the budget is spent and capped (a launch
refused saying why, contacts whose step had not started waiting durably, a contact mid-chain
finishing its current step), and released when an admin raises the budget or the month
turns, with nothing lost and nothing computed twice.

Real parts: embedded PostgreSQL, the offline model priced by a deployment price file (so
its calls cost money), the flows and the campaign-resume function's real app; the inline
transport stands in for Pub/Sub and Cloud Tasks (as in test_campaign_flow.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from colony.adapters.embedding import OfflineHashEmbedder
from colony.contracts.admin import OrgSettingsReplace
from colony.contracts.lifecycle import ScheduleRun
from colony.errors import BudgetCapped
from colony.flows.campaigns import campaign
from colony.flows.handlers import PUBSUB_HANDLERS
from colony.flows.tenants import budget, org_admin, schedules
from colony.knowledge import KnowledgeStore
from colony.llm.agent_call import llm_from_settings
from colony.local.demo import load_demo
from colony.observability.call_records import CallRecorder
from colony.ports import LlmCallRecord
from colony.runtime.deps import Deps, set_deps_for_tests
from colony.settings import Settings
from colony.store import fetch_all
from colony.store.campaigns import campaigns
from colony.testing.inline import InlineTransport, local_deps, run_until_idle
from tests.apps import registered_app
from tests.conftest import PgDB
from tests.test_campaign_flow import ORG, all_contacts_campaign, llm_calls

pytestmark = pytest.mark.covers("AGT-002", "AGT-003", "AGT-004", "AGT-005", "ENT-005")

# The offline model at a price that makes a call cost a few dollars: a budget of $10 is
# spent after a handful of AGT-003 calls.
PRICES = {
    "models": {"offline-deterministic-v1": {"input": 1000, "cached_input": 100, "output": 1000}}
}


def make_deps(testdb: PgDB, tmp_path: Path) -> Deps:
    """The demo org, its calls priced by ``PRICES``."""
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps(PRICES))
    settings = Settings.from_env({"COLONY_PRICES_FILE": str(prices)})
    db = testdb.app()
    knowledge = KnowledgeStore(db, OfflineHashEmbedder())
    load_demo(db, knowledge, say=lambda _: None)
    return local_deps(settings, db, InlineTransport(), llm_from_settings(settings, db), knowledge)


def at_list_prices(deps: Deps) -> Deps:
    """The same deps, the packaged price table pricing the calls (the offline model at 0)."""
    settings = Settings.from_env({})
    return replace(deps, settings=settings, llm_deps=llm_from_settings(settings, deps.db))


def set_budget(deps: Deps, **spend: Any) -> dict[str, Any]:
    now = org_admin.settings(deps, ORG)
    body = OrgSettingsReplace.model_validate({**now, "budget": {**now["budget"], **spend}})
    return org_admin.replace_settings(deps, ORG, body)


def rows(deps: Deps, sql: str) -> list[dict[str, Any]]:
    with deps.db.transaction(ORG) as cur:
        return fetch_all(cur, sql)


def run_state(deps: Deps, run_id: str) -> dict[str, Any]:
    with deps.db.transaction(ORG) as cur:
        [run] = fetch_all(
            cur,
            "SELECT status, contacts_total, contacts_done FROM campaign_runs WHERE id = %s",
            (run_id,),
        )
    return run


def releases(deps: Deps) -> list[Any]:
    return [t for t in deps.transport.tasks.values() if t.target == "campaign-resume"]


@pytest.fixture
def resume_app(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Deps], Any]]:
    """The campaign-resume function's real app, over the test's deps."""

    def app(deps: Deps) -> Any:
        set_deps_for_tests(deps)
        return registered_app("campaign-resume", monkeypatch)

    yield app
    set_deps_for_tests(None)


def test_a_spent_budget_holds_new_campaign_work_until_it_is_raised(
    make_db: Callable[..., PgDB], tmp_path: Path, resume_app: Callable[[Deps], Any]
) -> None:
    # What the campaign costs without a budget: the calls each agent makes for it.
    free = make_deps(make_db(), tmp_path)
    free_run = campaign.launch(free, ORG, all_contacts_campaign(free))
    assert not run_until_idle(free, free.transport).dead_letters
    assert run_state(free, free_run)["status"] == "completed"
    baseline = llm_calls(free)

    deps = make_deps(make_db(), tmp_path)
    kept = set_budget(deps, monthly_usd=10, alert_share=0.5, hard_cap=True)
    assert kept["budget"] == {"monthly_usd": 10.0, "alert_share": 0.5, "hard_cap": True}
    run_id = campaign.launch(deps, ORG, all_contacts_campaign(deps))
    stats = run_until_idle(deps, deps.transport)
    assert not stats.dead_letters and not stats.rejected

    # The budget ran out during enrichment: the run waits, its contacts held, not lost.
    run = run_state(deps, run_id)
    assert run["status"] == "running" and run["contacts_done"] < run["contacts_total"]
    spent = budget.standing(deps, ORG)
    assert spent.state == "capped" and spent.spent_usd >= 10
    calls = llm_calls(deps)
    assert 1 <= calls["AGT-003"] < baseline["AGT-003"] and "AGT-005" not in calls
    held = rows(deps, "SELECT step_key, topic FROM budget_holds WHERE released_at IS NULL")
    done = rows(deps, "SELECT step_key FROM run_steps WHERE step_key LIKE 'enrich:%%'")
    enriched = {r["step_key"].split(":")[1] for r in done}
    # every contact whose enrichment had not started waits for it; every contact mid-chain
    # finished its current step (enrich) and waits for the next (qualify)
    assert {k for k in (r["step_key"] for r in held) if k.startswith("qualify:")} == {
        f"qualify:{c}" for c in enriched
    }
    assert len(held) == baseline["AGT-003"]  # one waiting step per contact that needs work
    assert spent.held == len(held)
    # both alerts, once each, with the spend they were raised on
    alerts = rows(deps, "SELECT kind, spent_usd, budget_usd FROM budget_alerts ORDER BY kind")
    assert [(a["kind"], a["budget_usd"]) for a in alerts] == [("reached", 10), ("soft", 10)]
    assert alerts[1]["spent_usd"] >= 5 and alerts[0]["spent_usd"] >= 10

    # A launch is refused, saying why.
    with pytest.raises(
        BudgetCapped, match=r"campaign launch refused: this month's budget is spent"
    ):
        campaign.launch(deps, ORG, all_contacts_campaign(deps))
    assert not deps.transport.pending

    # A redelivered handoff whose step is done goes on (replayed, no model call) and its next
    # step waits again: nothing computed twice.
    first = sorted(enriched)[0]
    with deps.db.transaction(ORG) as cur:
        campaign_row = campaigns.get(cur, campaign.campaigns.run(cur, run_id)["campaign_id"])
    again = campaign.handoff_event(ORG, campaign_row, run_id, first, "AGT-003")
    PUBSUB_HANDLERS["enrichment"](deps, again, "redelivered-1")
    assert llm_calls(deps) == calls
    assert run_until_idle(deps, deps.transport).delivered == 1  # the qualify handoff, held again
    assert budget.standing(deps, ORG).held == len(held)

    # Raising the budget queues the release; the campaign-resume function publishes what
    # waited, and the run completes with exactly the calls an unbudgeted run makes.
    assert not releases(deps)
    set_budget(deps, monthly_usd=100_000)
    [task] = releases(deps)
    answer = resume_app(deps).post("/", data=task.body, content_type="application/json")
    assert answer.status_code == 200, answer.get_json()
    assert answer.get_json() == {"released": len(held), "next_page": None}
    stats = run_until_idle(deps, deps.transport)
    assert not stats.dead_letters and not stats.rejected
    assert run_state(deps, run_id)["status"] == "completed"
    assert llm_calls(deps) == baseline
    assert budget.standing(deps, ORG).held == 0
    assert not rows(deps, "SELECT 1 FROM budget_holds WHERE released_at IS NULL")


def test_held_work_resumes_when_the_month_turns(
    testdb: PgDB, tmp_path: Path, resume_app: Callable[[Deps], Any]
) -> None:
    deps = make_deps(testdb, tmp_path)
    set_budget(deps, monthly_usd=3)
    run_id = campaign.launch(deps, ORG, all_contacts_campaign(deps))
    run_until_idle(deps, deps.transport)
    assert budget.standing(deps, ORG).state == "capped"
    held = budget.standing(deps, ORG).held
    assert held > 0
    # the daily schedule serves only orgs with held work; this month it finds the budget spent
    with deps.db.transaction("org_budget_other") as cur:
        cur.execute("INSERT INTO organizations (id, name) VALUES ('org_budget_other', 'Other')")
    fanned = schedules.run(deps, ScheduleRun(name="budget-release"))
    assert fanned["enqueued"] == 1
    [task] = releases(deps)
    assert json.loads(task.body) == {
        "kind": "budget.release",
        "org_id": ORG,
        "run": "20261130T0900",  # the run's slot: the tests' clock, no Scheduler header
        "after": None,
    }
    app = resume_app(deps)
    still = app.post("/", data=task.body, content_type="application/json").get_json()
    assert still["released"] == 0 and "or the month ends" in still["waiting"]
    assert budget.standing(deps, ORG).held == held

    # The month turns: what was spent is last month's (the daily totals are what a budget
    # reads). The rest of the campaign is priced at list prices (the offline model: 0), so
    # it can finish this month.
    testdb.as_owner(
        lambda conn: (
            conn.cursor().execute(
                "UPDATE llm_usage_daily SET day = (day - interval '1 month')::date"
            ),
            conn.commit(),
        )
    )
    assert budget.standing(deps, ORG).state == "ok"
    deps = at_list_prices(deps)
    deps.transport.tasks.clear()
    schedules.run(deps, ScheduleRun(name="budget-release"), scheduled="2026-12-01T00:05:00Z")
    [task] = releases(deps)
    assert task.task_id == f"budget-release-20261201T0005-{ORG}"
    released = resume_app(deps).post("/", data=task.body, content_type="application/json")
    assert released.get_json() == {"released": held, "next_page": None}
    stats = run_until_idle(deps, deps.transport)
    assert not stats.dead_letters and not stats.rejected
    assert run_state(deps, run_id)["status"] == "completed"
    assert budget.standing(deps, ORG).held == 0


def test_without_a_hard_cap_a_spent_budget_only_alerts(testdb: PgDB, tmp_path: Path) -> None:
    deps = make_deps(testdb, tmp_path)
    set_budget(deps, monthly_usd=5, hard_cap=False)
    run_id = campaign.launch(deps, ORG, all_contacts_campaign(deps))
    run_until_idle(deps, deps.transport)
    assert run_state(deps, run_id)["status"] == "completed"
    now = budget.standing(deps, ORG)
    assert now.state == "over" and now.held == 0 and now.refusal() is None
    alerts = rows(deps, "SELECT kind, hard_cap FROM budget_alerts ORDER BY kind")
    assert alerts == [{"kind": "reached", "hard_cap": False}, {"kind": "soft", "hard_cap": False}]
    assert budget.standing(deps, ORG).as_dict()["share"] > 1


def test_the_alerts_are_raised_once_a_month_as_the_spend_is_written(testdb: PgDB) -> None:
    """The trigger raises each alert with the call that reaches it, whichever way the call is
    recorded, and never again that month; with no budget nothing is raised."""
    db = testdb.app()
    with db.transaction(ORG) as cur:
        cur.execute("INSERT INTO organizations (id, name) VALUES (%s, 'Alerts')", (ORG,))
    deps = local_deps(Settings.from_env({}), db, InlineTransport())
    recorder = CallRecorder(deps.db)
    call = LlmCallRecord(ORG, "AGT-010", None, "gpt-4o", (), 100_000, 0, latency_ms=1.0)  # $0.25
    recorder.record(call)
    assert not rows(deps, "SELECT 1 FROM budget_alerts")  # no budget yet
    set_budget(deps, monthly_usd=1, alert_share=0.6)
    for _ in range(2):
        recorder.record(call)
    assert rows(deps, "SELECT kind, spent_usd FROM budget_alerts") == [
        {"kind": "soft", "spent_usd": Decimal("0.75")}
    ]
    for _ in range(3):
        recorder.record(call)
    alerts = rows(deps, "SELECT kind, spent_usd, delivered_at FROM budget_alerts ORDER BY id")
    assert alerts == [
        {"kind": "soft", "spent_usd": Decimal("0.75"), "delivered_at": None},
        {"kind": "reached", "spent_usd": Decimal("1.00"), "delivered_at": None},
    ]
