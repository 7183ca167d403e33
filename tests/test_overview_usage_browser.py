"""/overview's spend view and budget banner (issue 38 item 2), in a real headless Chromium
against the real chat function and the embedded PostgreSQL: this month's total, its share of
the budget, the spend by agent and by campaign (a campaign's planted markup shown as text),
the unpriced calls named, and the banner saying why campaign work waits while the budget is
spent. axe-core finds no serious or critical violation. The screenshot is
``artifacts/overview-usage.png`` (git-ignored).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from colony.store.campaigns import campaigns
from tests.axe import serious_violations
from tests.conftest import PgDB
from tests.overview_stack import ORG, overview_stack, screenshot
from tests.test_cli_usage import spend

pytestmark = pytest.mark.covers("fn:chat", "ENT-005")

HOSTILE = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=1</script>'


def words(node: object) -> str:
    return str(node.get_attribute("textContent"))  # type: ignore[attr-defined]


def test_the_spend_view_and_the_banner_say_where_the_budget_stands(
    testdb: PgDB, tmp_path: Path, browser: webdriver.Chrome
) -> None:
    db = testdb.app()
    with db.transaction(ORG) as cur:
        cur.execute("INSERT INTO organizations (id, name) VALUES (%s, 'ZoomProp')", (ORG,))
        campaign = campaigns.create(
            cur,
            ORG,
            name=f"Spring {HOSTILE}",
            angle="Signal",
            tier="T1",
            bounce_threshold=0.05,
            complaint_threshold=0.003,
        )
        campaigns.start_run(cur, "run-usage", ORG, campaign, "running", 2)
        cur.execute("INSERT INTO org_settings (org_id, budget_monthly_usd) VALUES (%s, 2)", (ORG,))
    spend(db, ORG, 3, agent_id="AGT-005", run_id="run-usage")
    spend(db, ORG, 1, agent_id="AGT-001", model="house-model")
    with db.transaction(ORG) as cur:  # a contact's enrichment, waiting for the budget
        cur.execute(
            "INSERT INTO budget_holds (org_id, run_id, step_key, campaign_id, topic, event)"
            " VALUES (%s, 'run-usage', 'enrich:c1', %s, 'colony-enrichment', %s::jsonb)",
            (ORG, campaign, json.dumps({"kind": "handoff"})),
        )
    with overview_stack(testdb, db, tmp_path, ["chat"]) as stack:
        wait = WebDriverWait(browser, 30)
        browser.get(f"{stack.base}/overview#token={stack.token}")
        banner = wait.until(
            lambda d: (b := d.find_element(By.ID, "budget-banner")).is_displayed() and b
        )
        assert banner.get_attribute("data-state") == "capped"
        assert banner.get_attribute("role") == "alert"
        said = words(banner)
        assert said.startswith("Budget reached: this month's budget is spent ($3.00 of $2.00")
        assert "until an admin raises the budget or the month ends" in said
        assert said.endswith("(1 campaign step waiting).")

        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#usage table"))
        usage = browser.find_element(By.ID, "usage")
        total = words(usage.find_element(By.CSS_SELECTOR, ".view-total"))
        assert total.endswith("(UTC): $3.00 on 4 model calls")
        assert "150% of the $2.00 monthly budget" in words(usage)
        assert "1 call of models without a price (house-model)" in words(usage)
        tables = usage.find_elements(By.CSS_SELECTOR, "table")
        by_agent = {
            words(r.find_element(By.TAG_NAME, "th")): words(
                r.find_element(By.CSS_SELECTOR, ".cost")
            )
            for r in tables[0].find_elements(By.CSS_SELECTOR, "tbody tr")
        }
        assert by_agent == {
            "AGT-005 Message Generator": "$3.00",
            "AGT-001 GTM Orchestrator": "$0.00",
        }
        campaign_rows = tables[1].find_elements(By.CSS_SELECTOR, "tbody tr")
        heads = [words(r.find_element(By.TAG_NAME, "th")) for r in campaign_rows]
        assert heads == [f"Spring {HOSTILE}", "No campaign (chat, brief, recordings…)"]
        assert words(campaign_rows[0].find_elements(By.TAG_NAME, "td")[-1]) == "1"  # waiting
        bars = usage.find_elements(By.CSS_SELECTOR, "svg rect[data-day]")
        assert len(bars) == 1
        assert browser.execute_script("return window.__pwned") is None
        assert serious_violations(browser) == [], "the spend view and the banner"
        screenshot(browser, "overview-usage", browser.find_element(By.ID, "usage-view"))
        screenshot(browser, "overview-budget-banner", banner)
