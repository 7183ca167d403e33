"""/overview's Knowledge view (issue 34 item 2) in a real headless Chromium against the real
chat function and the embedded PostgreSQL with the demo org's Knowledge Core: a person
reaches it by keyboard, reads a domain's documents, writes one (it is embedded and listed),
asks what an agent would get for a query, opens a Notion page's document (read-only, a link
to Notion), and retires what they wrote. Planted markup in a title is shown as text.
axe-core finds no serious or critical violation. The screenshot is
``artifacts/overview-kc.png`` (git-ignored).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.select import Select
from selenium.webdriver.support.ui import WebDriverWait

from colony.adapters.embedding import OfflineHashEmbedder
from colony.knowledge import ChunkIn, KnowledgeStore
from tests.axe import serious_violations
from tests.conftest import PgDB
from tests.overview_stack import ORG, demo_db, overview_stack, screenshot

pytestmark = pytest.mark.covers("fn:chat", "ENT-007")

HOSTILE = '<img src=x onerror="window.__pwned=1">'
NOTION_PAGE = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"


def words(node: object) -> str:
    return str(node.get_attribute("textContent"))  # type: ignore[attr-defined]


def test_a_person_reads_writes_searches_and_retires_knowledge(
    testdb: PgDB, tmp_path: Path, browser: webdriver.Chrome
) -> None:
    db = demo_db(testdb)
    KnowledgeStore(db, OfflineHashEmbedder()).sync_source(
        ORG,
        "notion",
        NOTION_PAGE,
        [ChunkIn("KC-06", "Competitor notes from the team's Notion.", title=f"Rivals {HOSTILE}")],
    )
    with overview_stack(testdb, db, tmp_path, ["chat"]) as stack:
        wait = WebDriverWait(browser, 30)
        browser.get(f"{stack.base}/overview#token={stack.token}")
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#kc-docs-body tr[data-source]"))
        domain = Select(browser.find_element(By.ID, "kc-domain"))
        assert len(domain.options) == 10
        assert domain.first_selected_option.get_attribute("value") == "KC-01"

        # The Notion page's document: read-only here, a link to its page, its title as text.
        domain.select_by_value("KC-06")
        row = wait.until(
            lambda d: d.find_element(
                By.CSS_SELECTOR, f'#kc-docs-body tr[data-source-id="{NOTION_PAGE}"]'
            )
        )
        assert words(row).startswith(f"Rivals {HOSTILE}notion (read-only)")
        row.find_element(By.CSS_SELECTOR, "button.kc-open").send_keys(Keys.ENTER)
        link = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "#kc-detail a"))
        assert link.get_attribute("href") == "https://www.notion.so/" + NOTION_PAGE.replace("-", "")
        detail = browser.find_element(By.ID, "kc-detail")
        assert detail.find_elements(By.XPATH, ".//button[.='Edit']") == []
        heading = detail.find_element(By.TAG_NAME, "h3")
        assert browser.switch_to.active_element == heading  # focus follows what opened
        assert browser.execute_script("return window.__pwned") is None

        # Writing a document, with the keyboard.
        new = browser.find_element(By.ID, "kc-new")
        new.send_keys(Keys.ENTER)
        title = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, ".kc-form input[type=text]"))
        assert browser.switch_to.active_element == title
        title.send_keys("Rival pricing, Q4")
        body = browser.find_element(By.CSS_SELECTOR, ".kc-form textarea")
        body.send_keys("Rival X discounts 20% at quarter end. Hold on value: inspection readiness.")
        tags = browser.find_elements(By.CSS_SELECTOR, ".kc-form textarea")[1]
        tags.send_keys("competitors: Rival X")
        browser.find_element(By.CSS_SELECTOR, ".kc-form button[type=submit]").send_keys(Keys.ENTER)
        wait.until(lambda d: words(d.find_element(By.ID, "kc-status")).startswith("Saved: 1 chunk"))
        wait.until(
            lambda d: words(d.find_element(By.CSS_SELECTOR, "#kc-detail h3")) == "Rival pricing, Q4"
        )
        detail = browser.find_element(By.ID, "kc-detail")
        assert "competitors: Rival X" in words(detail)
        assert "Hold on value: inspection readiness." in words(detail)
        titles = [
            words(t) for t in browser.find_elements(By.CSS_SELECTOR, "#kc-docs-body button.kc-open")
        ]
        assert titles[0] == "Rival pricing, Q4" and f"Rivals {HOSTILE}" in titles

        # What an agent reading KC-06 gets for a query: the new document first.
        query = browser.find_element(By.ID, "kc-query")
        query.send_keys("quarter end discounts", Keys.ENTER)
        results = wait.until(
            lambda d: d.find_elements(By.CSS_SELECTOR, "#kc-detail .kc-results li")
        )
        assert words(results[0].find_element(By.CSS_SELECTOR, "button")) == "Rival pricing, Q4"
        assert "similarity" in words(results[0])
        assert serious_violations(browser) == [], "the Knowledge view"
        screenshot(browser, "overview-kc", browser.find_element(By.ID, "kc-view"))

        # Retiring it: asked once more, then gone from the list and from the agents' reach.
        results[0].find_element(By.CSS_SELECTOR, "button").send_keys(Keys.ENTER)
        retire = wait.until(
            lambda d: d.find_element(By.XPATH, "//div[@id='kc-detail']//button[.='Retire']")
        )
        retire.send_keys(Keys.ENTER)
        sure = wait.until(lambda d: d.find_element(By.XPATH, "//button[.='Retire it']"))
        assert browser.switch_to.active_element == sure
        sure.send_keys(Keys.ENTER)
        wait.until(
            lambda d: words(d.find_element(By.ID, "kc-status")).startswith("Retired: 1 chunk")
        )
        titles = [
            words(t) for t in browser.find_elements(By.CSS_SELECTOR, "#kc-docs-body button.kc-open")
        ]
        assert "Rival pricing, Q4" not in titles
    with db.transaction(ORG) as cur:
        cur.execute("SELECT action FROM audit_log WHERE action LIKE 'kc.%%' ORDER BY id")
        assert [r[0] for r in cur.fetchall()] == ["kc.create", "kc.retire"]
