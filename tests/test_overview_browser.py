"""The /overview page in a real headless Chromium (Debian's ``chromium`` + ``chromium-driver``,
driven by Selenium with the system chromedriver), against the real chat function.

Send a message, see the streamed answer; ask for a campaign launch, click Approve on the
inline card, see the resumed result and the run's funnel appear live; axe-core finds no
serious or critical violation. The screenshot is saved as ``artifacts/overview.png``
(git-ignored). ``make test`` installs the browser (and axe-core) when missing; this test
does not skip.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from tests.axe import serious_violations
from tests.conftest import PgDB
from tests.overview_stack import ORG, demo_db, overview_stack, screenshot


def test_overview_page_streams_and_approves_inline(
    testdb: PgDB, tmp_path: Path, browser: webdriver.Chrome
) -> None:
    db = demo_db(testdb)
    with db.transaction(ORG) as cur:
        cur.execute(
            "INSERT INTO daily_briefs (org_id, brief_date, content) VALUES"
            " (%s, (now() AT TIME ZONE 'UTC')::date, %s)",
            (ORG, f"Brief {uuid.uuid4().hex[:6]}: 5 open deals; 2 items await you."),
        )
    chain = ["chat", "campaign", "enrichment", "qualification", "message-generator"]
    with overview_stack(testdb, db, tmp_path, chain) as stack:
        base, token = stack.base, stack.token
        wait = WebDriverWait(browser, 30)
        browser.get(f"{base}/overview#token={token}")
        wait.until(lambda d: "open deals" in d.find_element(By.ID, "brief").text)
        assert "#token" not in browser.current_url, "the token leaves the address bar"

        box = browser.find_element(By.ID, "message")
        assert browser.switch_to.active_element == box, "the message box has the focus"
        box.send_keys("What does our pipeline look like?", Keys.ENTER)
        wait.until(
            lambda d: any(
                "Pipeline:" in m.text for m in d.find_elements(By.CSS_SELECTOR, ".msg.assistant")
            )
        )
        assert any(
            "pipeline_snapshot" in t.text for t in browser.find_elements(By.CSS_SELECTOR, ".tool")
        )

        box.send_keys("Launch a Signal campaign for T1 prospects P-007", Keys.ENTER)
        approve = wait.until(ec.element_to_be_clickable((By.CSS_SELECTOR, ".card .approve")))
        assert "launch_campaign" in browser.find_element(By.CSS_SELECTOR, ".card").text
        assert browser.switch_to.active_element == approve, "the card takes the focus"
        approve.click()
        wait.until(
            lambda d: any(
                "Launched campaign" in m.text
                for m in d.find_elements(By.CSS_SELECTOR, ".msg.assistant")
            )
        )
        assert "Approved" in browser.find_element(By.CSS_SELECTOR, ".card").text
        # the run's funnel appears without a reload (pushed over /campaigns/events)
        wait.until(
            lambda d: (
                "Signal outreach, T1"
                in d.execute_script("return document.getElementById('funnels').textContent")
            )
        )
        # the decision is on the record, as the person's, with its effect
        wait.until(lambda d: "decision approve" in d.find_element(By.ID, "audit").text)
        audit = browser.find_element(By.ID, "audit").text
        assert "local-user (ui) · decision approve · tool_action" in audit
        assert "effect tool_run" in audit

        assert serious_violations(browser) == [], "the conversation with a decided card"

        screenshot(browser, "overview")
        resources = browser.execute_script(
            "return performance.getEntriesByType('resource').map(e => e.name)"
        )
        assert all(url.startswith(base) for url in resources), resources
