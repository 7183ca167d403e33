"""The /overview views people look at rather than read (issue 20 item 2), in a real headless
Chromium against the real chat function and the embedded PostgreSQL: the pipeline chart and
its table (their numbers are the deals'), a campaign's funnel moving live over server-sent
events when a contact's standing changes in the database (no reload, no polling), the brief
in its five sections, and a tool result in the conversation as a table. Markup and script
planted in a deal's name and stage, a campaign's name and the brief's text render as text.
axe-core finds no serious or critical violation with every view shown. The screenshots are
``artifacts/overview-pipeline.png``, ``-funnels``, ``-brief`` and ``-tool-result``
(git-ignored).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from colony.flows.insights.brief_text import SECTIONS, render
from colony.store import fetch_all
from colony.store.campaigns import campaigns
from tests.axe import serious_violations
from tests.conftest import PgDB
from tests.overview_stack import ORG, demo_db, overview_stack, screenshot

pytestmark = pytest.mark.covers("ENT-003", "ENT-005", "ENT-009", "AGT-001", "fn:chat")

HOSTILE = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=1</script>'
ODD_STAGE = "<b>pilot</b>"  # an import may bring a stage of its own; it is text too


def words(node: Any) -> str:
    """What a node says, as written (``.text`` applies CSS text-transform)."""
    return str(node.get_attribute("textContent"))


def count(driver: webdriver.Chrome, campaign: str, stage: str) -> str:
    """A funnel's count as shown now (read in one script: a live update replaces the nodes)."""
    return str(
        driver.execute_script(
            'const n = document.querySelector(`#funnels [data-campaign="${arguments[0]}"]'
            " li[data-stage=\"${arguments[1]}\"] .n`); return n ? n.textContent : '';",
            campaign,
            stage,
        )
    )


def test_pipeline_funnels_brief_and_tool_results_are_drawn_from_the_data(
    testdb: PgDB, tmp_path: Path, browser: webdriver.Chrome
) -> None:
    db = demo_db(testdb)
    sections = {key: f"{title}: nothing to report." for key, title in SECTIONS}
    sections["alerts"] = f"Watch this: {HOSTILE}\n- and a second alert"
    with db.transaction(ORG) as cur:
        cur.execute(
            "INSERT INTO deals (org_id, name, stage, value) VALUES (%s, %s, 'demo', 999000),"
            " (%s, 'Odd stage deal', %s, 1234)",
            (ORG, f"Deal {HOSTILE}", ORG, ODD_STAGE),
        )
        cur.execute(
            "INSERT INTO daily_briefs (org_id, brief_date, content, sections)"
            " VALUES (%s, (now() AT TIME ZONE 'UTC')::date, %s, %s::jsonb)",
            (ORG, render(sections), json.dumps(sections)),
        )
        people = [r["id"] for r in fetch_all(cur, "SELECT id FROM contacts ORDER BY id LIMIT 4")]
        cur.execute("UPDATE contacts SET icp_recommendation = NULL")
        campaign = campaigns.create(
            cur,
            ORG,
            name=f"Spring {HOSTILE}",
            angle="Signal",
            tier="T1",
            bounce_threshold=0.05,
            complaint_threshold=0.003,
        )
        for person in people:
            campaigns.add_contact(cur, ORG, campaign, person)
        campaigns.start_run(cur, "run-views", ORG, campaign, "running", len(people))
        expected = fetch_all(
            cur, "SELECT stage, count(*) AS n, coalesce(sum(value), 0) AS v FROM deals GROUP BY 1"
        )
    with overview_stack(testdb, db, tmp_path, ["chat"]) as stack:
        wait = WebDriverWait(browser, 30)
        browser.get(f"{stack.base}/overview#token={stack.token}")

        # The pipeline: a row (and a bar) per stage, in the sales order, with the deals' sums.
        rows = wait.until(
            lambda d: (
                (found := d.find_elements(By.CSS_SELECTOR, "#pipeline tbody tr"))
                and len(found) == len(expected)
                and found
            )
        )
        shown = {
            r.get_attribute("data-stage"): (
                words(r.find_element(By.CSS_SELECTOR, ".deals")),
                words(r.find_element(By.CSS_SELECTOR, ".value")),
            )
            for r in rows
        }
        assert shown == {e["stage"]: (str(e["n"]), f"{e['v']:,.0f}") for e in expected}
        order = [r.get_attribute("data-stage") for r in rows]
        assert order[:2] == ["discovery", "demo"] and order[-1] == ODD_STAGE
        bars = browser.find_elements(By.CSS_SELECTOR, "#pipeline svg g[data-stage]")
        assert [b.get_attribute("data-stage") for b in bars] == order
        demo = rows[1].find_element(By.CSS_SELECTOR, ".top")
        assert words(demo).startswith(f"Deal {HOSTILE} (999K)")

        # The brief: five sections, each under its own heading, the planted text as text.
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#brief .brief-section"))
        headings = browser.find_elements(By.CSS_SELECTOR, "#brief .brief-section h3")
        assert [words(h) for h in headings] == [title for _, title in SECTIONS]
        alerts = browser.find_element(By.CSS_SELECTOR, '#brief [data-section="alerts"]')
        assert [words(li) for li in alerts.find_elements(By.TAG_NAME, "li")] == [
            f"Watch this: {HOSTILE}",
            "and a second alert",
        ]

        # The funnel: counts from the database, then live as a contact qualifies.
        wait.until(lambda d: count(d, campaign, "contacts") == "4")
        funnel = browser.find_element(By.CSS_SELECTOR, f'#funnels [data-campaign="{campaign}"]')
        assert words(funnel.find_element(By.TAG_NAME, "h3")) == f"Spring {HOSTILE}"
        assert count(browser, campaign, "qualified") == "0"
        assert "running now: 0 of 4 contacts done" in words(funnel)
        browser.execute_script("window.__samePage = true")
        with db.transaction(ORG) as cur:
            campaigns.set_score(cur, people[0], 88, [], "qualify", "T1")
            campaigns.contact_done(cur, "run-views")
        wait.until(lambda d: count(d, campaign, "qualified") == "1")
        progress = browser.execute_script(
            'const p = document.querySelector(`#funnels [data-campaign="${arguments[0]}"]'
            " progress`); return [p.value, p.max];",
            campaign,
        )
        assert progress == [1, 4]
        assert browser.execute_script("return window.__samePage") is True, "no reload"
        fetched = browser.execute_script(
            "return performance.getEntriesByType('resource').map(e => e.name)"
        )
        assert [u for u in fetched if u.endswith("/pipeline")] == [f"{stack.base}/pipeline"]
        # the funnels were never asked for again: one stream (listed once it ends), pushed to
        assert len([u for u in fetched if "/campaigns" in u]) <= 1, "no polling"

        # A tool result: a table (and a chart), not JSON.
        box = browser.find_element(By.ID, "message")
        box.send_keys("What does our pipeline look like?", Keys.ENTER)
        result = wait.until(
            lambda d: d.find_elements(
                By.CSS_SELECTOR, '#log .tool-result[data-tool="pipeline_snapshot"] table'
            )
        )[0]
        cells = [words(th) for th in result.find_elements(By.CSS_SELECTOR, "tbody th")]
        assert "closed won" in cells and ODD_STAGE in cells
        assert '{"deals_by_stage"' not in words(browser.find_element(By.ID, "log"))

        # Any other tool's result, generically: rows of objects as a table, an object as a
        # definition list, deep nesting as one line of JSON text; all of it as text.
        generic = browser.execute_script(
            "const node = ColonyViews.toolResult({name: 'search_knowledge', ok: true, result:"
            " {query: arguments[0], results: [{title: arguments[0], similarity: 0.5},"
            " {title: 'b', deep: {a: {b: {c: 1}}}}]}});"
            "document.getElementById('log').appendChild(node);"
            " return [node.querySelectorAll('table tbody tr').length,"
            " [...node.querySelectorAll('table thead th')].map(t => t.textContent),"
            " [...node.querySelector('dl').children].filter(c => c.tagName === 'DT')"
            ".map(t => t.textContent),"
            " node.querySelector('table tbody td').textContent,"
            " node.querySelector('code').textContent];",
            HOSTILE,
        )
        assert generic == [
            2,
            ["title", "similarity", "deep"],
            ["query", "results"],
            HOSTILE,
            '{"b":{"c":1}}',
        ]

        views = ("#pipeline", "#funnels", "#brief", "#log")
        for where in views:
            assert not browser.find_elements(
                By.CSS_SELECTOR, f"{where} img, {where} script, {where} b"
            ), where
        assert browser.execute_script("return window.__pwned") is None
        assert serious_violations(browser) == [], "the pipeline, funnels, brief and tool result"

        screenshot(browser, "overview-pipeline", browser.find_element(By.ID, "pipeline-view"))
        screenshot(browser, "overview-funnels", browser.find_element(By.ID, "funnels-view"))
        screenshot(browser, "overview-brief", browser.find_element(By.ID, "brief"))
        tool = browser.find_element(
            By.CSS_SELECTOR, '#log .tool-result[data-tool="pipeline_snapshot"]'
        )
        screenshot(browser, "overview-tool-result", tool)
        resources = browser.execute_script(
            "return performance.getEntriesByType('resource').map(e => e.name)"
        )
        assert all(url.startswith(stack.base) for url in resources), resources
        assert any(url.endswith("/overview/views.js") for url in resources)
