"""/overview tells a person what could not reach them (issue 35, "Bad input": a Slack webhook
that answered 404 or 429 until we gave up, a revoked bot token that paused the org's Slack),
in a real headless Chromium against the real chat function and the embedded PostgreSQL; what
Slack said is shown as text, never markup; with nothing to tell, the section is hidden. axe-core
finds no serious or critical violation with it shown."""

from __future__ import annotations

from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from colony.store.tenants import members
from tests.axe import serious_violations
from tests.conftest import PgDB
from tests.overview_stack import ORG, demo_db, overview_stack

pytestmark = pytest.mark.covers("fn:chat")

PLANTED = "<img src=x onerror=alert(1)> 404 no_service"


def test_what_did_not_reach_a_person_is_on_their_overview(
    testdb: PgDB, tmp_path: Path, browser: webdriver.Chrome
) -> None:
    db = demo_db(testdb)
    with db.transaction(ORG) as cur:
        members.join(cur, ORG, "local-user", "org:admin", "me@zoomprop.example", "Me")
        cur.execute(
            "INSERT INTO notifications (org_id, user_id, channel, kind, dedupe_key, due_at,"
            " status, attempts, error) VALUES (%s, 'local-user', 'slack', 'positive_reply',"
            " 'slack:local-user:positive_reply:r1', now(), 'failed', 4, %s)",
            (ORG, f"gave up after 4 attempts: the Slack webhook answered {PLANTED}"),
        )
        cur.execute(
            "INSERT INTO notify_settings (org_id, slack_team_id, slack_token_secret,"
            " slack_paused_at, slack_pause_reason) VALUES (%s, 'T0DEMO', 'slack-x', now(),"
            " 'Slack refused the org''s bot token (token_revoked)')",
            (ORG,),
        )
    with overview_stack(testdb, db, tmp_path, ["chat"]) as stack:
        wait = WebDriverWait(browser, 30)
        browser.get(f"{stack.base}/overview#token={stack.token}")
        section = wait.until(
            lambda d: (found := d.find_element(By.ID, "notices-view")).is_displayed() and found
        )
        paused, failed = section.find_elements(By.CSS_SELECTOR, "#notices > li")
        assert "Slack is paused for your organisation" in str(paused.get_attribute("textContent"))
        said = str(failed.get_attribute("textContent"))
        assert said.startswith("positive_reply by slack (failed): gave up after 4 attempts")
        assert PLANTED in said  # as text
        assert failed.find_elements(By.TAG_NAME, "img") == []
        assert serious_violations(browser) == [], "the notices"

        with db.transaction(ORG) as cur:  # an admin reconnected Slack; the person was told
            cur.execute("UPDATE notify_settings SET slack_paused_at = NULL")
            cur.execute("DELETE FROM notifications")
        browser.refresh()
        wait.until(lambda d: d.find_element(By.ID, "notices").get_attribute("data-count") == "0")
        assert not browser.find_element(By.ID, "notices-view").is_displayed()
