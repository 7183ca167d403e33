"""/overview's Prospects view (issue 34 item 1) in a real headless Chromium against the real
chat function and the embedded PostgreSQL: the list filtered on the server from the page's
form, a prospect opened by keyboard with its ICP reasons, its signal's quote and source link,
its sequence's next step, and the reply threaded under the message it answers; planted markup
in a quote and a reply shown as text. axe-core finds no serious or critical violation. The
screenshot is ``artifacts/overview-prospect.png`` (git-ignored).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.select import Select
from selenium.webdriver.support.ui import WebDriverWait

from colony.local.tokens import mint_local_token
from tests.axe import serious_violations
from tests.conftest import PgDB
from tests.overview_stack import overview_stack, screenshot
from tests.test_prospect_records import ORG, seed

pytestmark = pytest.mark.covers("fn:chat", "ENT-002")


def words(node: object) -> str:
    return str(node.get_attribute("textContent"))  # type: ignore[attr-defined]


def test_a_person_finds_a_prospect_and_reads_its_story(
    testdb: PgDB, tmp_path: Path, browser: webdriver.Chrome
) -> None:
    db = testdb.app()
    ids = seed(db)
    with overview_stack(testdb, db, tmp_path, ["chat"]) as stack:
        token = mint_local_token(tmp_path, ORG)
        wait = WebDriverWait(browser, 30)
        browser.get(f"{stack.base}/overview#token={token}")
        wait.until(
            lambda d: words(d.find_element(By.ID, "prospects-status")).startswith("50 of 62")
        )

        Select(browser.find_element(By.ID, "pf-tier")).select_by_value("T1")
        browser.find_element(By.ID, "pf-q").send_keys("mercy", Keys.ENTER)  # submits the form
        wait.until(
            lambda d: words(d.find_element(By.ID, "prospects-status")) == "1 of 1 prospects shown"
        )
        [row] = browser.find_elements(By.CSS_SELECTOR, "#prospects-body tr[data-id]")
        assert row.get_attribute("data-id") == ids["dana"]
        assert "active · replied" in words(row) and "hiring" in words(row)

        row.find_element(By.CSS_SELECTOR, "button").send_keys(Keys.ENTER)
        page = wait.until(
            lambda d: d.find_element(By.CSS_SELECTOR, f'#prospect[data-id="{ids["dana"]}"]')
        )
        heading = page.find_element(By.TAG_NAME, "h3")
        assert words(heading) == "Dana Whitfield" and browser.switch_to.active_element == heading
        text = words(page)
        assert "Expanding campus and hiring facilities leadership." in text
        assert "“We are hiring a Director of Facilities <script>”" in text
        assert "next: step 2 of 3" in text and "Spring <b>Signal</b> (Signal T1): active" in text
        link = page.find_element(By.CSS_SELECTOR, ".qprov a")
        assert link.get_attribute("href") == "https://mercyridge.example/careers"
        assert link.get_attribute("rel") == "noopener noreferrer nofollow"
        message = page.find_element(By.CSS_SELECTOR, "article.pr-message")
        assert message.get_attribute("aria-label") == "Step 1: Your new campus"
        reply = message.find_element(By.CSS_SELECTOR, ".pr-reply")  # threaded under it
        assert "Sounds good, <b>call me</b>." in words(reply) and "positive" in words(reply)
        assert page.find_elements(By.CSS_SELECTOR, ".pr-reply b") == []  # text, not markup
        assert "user_ana · approve" in text
        assert serious_violations(browser) == [], "the Prospects view"
        screenshot(browser, "overview-prospect", browser.find_element(By.ID, "prospects-view"))
