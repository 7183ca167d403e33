"""The chat function's ``/usage`` over real HTTP (issue 38 item 2): a month's spend in all, by
agent, campaign and day, the unpriced calls and the budget's standing, as two tenants, each
seeing only its own; another month, a bad month, no token, a wrong method; and the page
carrying the view that draws it.

Real parts: embedded PostgreSQL (calls recorded by the real ``CallRecorder``, priced by the
packaged table), the chat function served by functions-framework, local bearer tokens.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from colony.local.functions import FunctionServers
from colony.local.tokens import mint_local_token
from colony.store import Database
from colony.store.campaigns import campaigns
from tests.conftest import APP_ROLE, PgDB
from tests.test_cli_usage import spend

pytestmark = pytest.mark.covers("fn:chat", "ENT-005")

ORG = "org_zoomprop_demo"
OTHER = "org_spend_other"


@dataclass
class Chat:
    base: str
    http: httpx.Client
    tokens: dict[str, str]

    def get(self, path: str, org: str | None = ORG, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.tokens[org]}"} if org else {}
        return self.http.get(f"{self.base}{path}", headers=headers, **kwargs)


@pytest.fixture
def chat(testdb: PgDB, tmp_path: Path) -> Iterator[tuple[Chat, Database, str]]:
    """The chat function over HTTP; two orgs with spend of their own, one of them over its
    alert share on a campaign's work and an unpriced model."""
    db = testdb.app()
    for org in (ORG, OTHER):
        with db.transaction(org) as cur:
            cur.execute("INSERT INTO organizations (id, name) VALUES (%s, %s)", (org, org))
    with db.transaction(ORG) as cur:
        campaign_id = campaigns.create(
            cur,
            ORG,
            name="Spring <b>push</b>",
            angle="Signal",
            tier="T1",
            bounce_threshold=0.05,
            complaint_threshold=0.003,
        )
        campaigns.start_run(cur, "run-spring", ORG, campaign_id, "running", 3)
        cur.execute(
            "INSERT INTO org_settings (org_id, budget_monthly_usd, budget_alert_share)"
            " VALUES (%s, 5, 0.5)",
            (ORG,),
        )
    spend(db, ORG, 3, agent_id="AGT-005", run_id="run-spring")
    spend(db, ORG, 1, agent_id="AGT-001", model="house-model")  # not in the price table
    spend(db, OTHER, 1, agent_id="AGT-004")
    env = {
        "COLONY_DB_MODE": "dsn",
        "COLONY_DB_DSN": testdb.dsn(APP_ROLE),
        "COLONY_TRANSPORT": "local",
        "COLONY_DATA_DIR": str(tmp_path),
    }
    tokens = {org: mint_local_token(tmp_path, org) for org in (ORG, OTHER)}
    with (
        FunctionServers(env, ["chat"], log_dir=tmp_path) as servers,
        httpx.Client(timeout=30) as http,
    ):
        yield Chat(servers.urls["chat"], http, tokens), db, campaign_id


def test_usage_over_http_shows_each_org_its_own_spend_and_budget(
    chat: tuple[Chat, Database, str],
) -> None:
    api, _, campaign_id = chat
    mine = api.get("/usage")
    assert mine.status_code == 200, mine.text
    report = mine.json()
    assert report["total"] == {
        "calls": 4,
        "unpriced_calls": 1,
        "tokens_in": 1_600_000,
        "tokens_cached": 0,
        "tokens_out": 0,
        "cost_usd": 3.0,  # the unpriced call's cost is unknown: not in it
    }
    assert {(a["agent_id"], a["calls"], a["cost_usd"]) for a in report["by_agent"]} == {
        ("AGT-005", 3, 3.0),
        ("AGT-001", 1, 0.0),
    }
    assert [(c["campaign_id"], c["name"], c["cost_usd"]) for c in report["by_campaign"]] == [
        (campaign_id, "Spring <b>push</b>", 3.0),
        (None, None, 0.0),
    ]
    [day] = report["days"]
    assert day["calls"] == 4 and len(day["by_agent"]) == 2 and len(day["by_campaign"]) == 2
    assert report["unpriced"] == [{"model": "house-model", "calls": 1}]
    budget = report["budget"]
    assert (budget["state"], budget["spent_usd"], budget["share"]) == ("alert", 3.0, 0.6)
    assert [a["kind"] for a in report["alerts"]] == ["soft"]
    assert report["alerts"][0]["delivered"] is False

    # The second tenant sees its own spend, and nothing of the first's.
    theirs = api.get("/usage", org=OTHER)
    assert theirs.status_code == 200
    other = theirs.json()
    assert other["org_id"] == OTHER and other["total"]["calls"] == 1
    assert other["total"]["cost_usd"] == 1.0 and other["budget"]["state"] == "none"
    assert other["alerts"] == [] and other["unpriced"] == []
    assert "Spring" not in theirs.text and campaign_id not in theirs.text
    assert "house-model" not in theirs.text

    # Another month; a month that is not one; no token; a method the route does not take.
    past = api.get("/usage", params={"month": "2020-01"}).json()
    assert past["month"] == "2020-01" and past["total"]["calls"] == 0 and past["budget"] is None
    assert api.get("/usage", params={"month": "2026-13"}).status_code == 400
    assert api.get("/usage", org=None).status_code == 401
    assert (
        api.http.post(
            f"{api.base}/usage", headers={"Authorization": f"Bearer {api.tokens[ORG]}"}
        ).status_code
        == 405
    )

    # The page carries the usage view and the banner it fills.
    page = api.http.get(f"{api.base}/overview").text
    assert 'id="usage"' in page and 'id="budget-banner"' in page
    assert "loadUsage" in api.http.get(f"{api.base}/overview/views.js").text
