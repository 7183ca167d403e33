"""/overview's alerts (issue 39 item 3), in a real headless Chromium against the real chat
function and the embedded PostgreSQL: a paused sending domain is shown above the queue with
why and the TXT records that mend it, as copyable text; a domain that passes raises nothing,
and the section is hidden. axe-core finds no serious or critical violation with it shown.
What the circuit breaker paused is an alert too, whose button only an org admin can use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from colony.local.tokens import mint_local_token
from colony.store import fetch_one, fetch_value
from tests.axe import serious_violations
from tests.conftest import PgDB
from tests.overview_stack import ORG, demo_db, overview_stack, screenshot

pytestmark = pytest.mark.covers("fn:chat")

DOMAIN = "mail.zoomprop.example"
KEY = "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA" + "c" * 320
PROBLEM = f"no DKIM key is published at colony1a2b3c4d._domainkey.{DOMAIN}"


def test_a_paused_sending_domain_is_an_alert_with_the_records_to_publish(
    testdb: PgDB, tmp_path: Path, browser: webdriver.Chrome
) -> None:
    db = demo_db(testdb)
    with db.transaction(ORG) as cur:
        cur.execute(
            "INSERT INTO sending_domains (org_id, domain, selector, public_key, key_secret,"
            " status, problems, added_by, verified_at, paused_at) VALUES (%s, %s,"
            " 'colony1a2b3c4d', %s, 'colony-dkim-x', 'paused', %s::jsonb, 'u1', now(), now())",
            (
                ORG,
                DOMAIN,
                KEY,
                json.dumps([{"record": "dkim", "code": "dkim_missing", "message": PROBLEM}]),
            ),
        )
    with overview_stack(
        testdb, db, tmp_path, ["chat"], env=lambda _: {"COLONY_SPF_INCLUDE": "_spf.relay.test"}
    ) as stack:
        wait = WebDriverWait(browser, 30)
        browser.get(f"{stack.base}/overview#token={stack.token}")
        section = wait.until(
            lambda d: (found := d.find_element(By.ID, "alerts-view")).is_displayed() and found
        )
        assert browser.find_element(By.ID, "alerts").get_attribute("data-count") == "1"
        (alert,) = section.find_elements(By.CSS_SELECTOR, "#alerts > li")
        said = str(alert.get_attribute("textContent"))
        assert f"Mail from {DOMAIN} is paused" in said and PROBLEM in said
        records = str(alert.find_element(By.TAG_NAME, "pre").get_attribute("textContent"))
        assert records.splitlines() == [
            f'{DOMAIN}. 3600 IN TXT "v=spf1 include:_spf.relay.test ~all"',
            f'colony1a2b3c4d._domainkey.{DOMAIN}. 3600 IN TXT "v=DKIM1; k=rsa; p={KEY[:237]}"'
            f' "{KEY[237:]}"',
            f'_dmarc.{DOMAIN}. 3600 IN TXT "v=DMARC1; p=none"',
        ]
        assert serious_violations(browser) == [], "the alerts"
        screenshot(browser, "overview-alerts", section)

        with db.transaction(ORG) as cur:  # the next check finds it mended
            cur.execute(
                "UPDATE sending_domains SET status = 'verified', paused_at = NULL,"
                " problems = '[]'::jsonb"
            )
        browser.refresh()
        wait.until(lambda d: d.find_element(By.ID, "alerts").get_attribute("data-count") == "0")
        assert not browser.find_element(By.ID, "alerts-view").is_displayed()


def test_what_the_breaker_paused_is_resumed_from_the_alert_by_an_admin_only(
    testdb: PgDB, tmp_path: Path, browser: webdriver.Chrome
) -> None:
    """Issue 39 item 4: the alert says what paused and why, and its button resumes it for an
    org admin; a member who is not one is told so, and nothing changes."""
    db = demo_db(testdb)
    with db.transaction(ORG) as cur:
        cur.execute(
            "INSERT INTO sender_pauses (org_id, scope, sender, status, reason, judged,"
            " bounce_rate, complaint_rate, paused_at) VALUES (%s, 'domain', %s, 'paused',"
            " 'complaints 1.00%%', 100, 0, 0.01, now())",
            (ORG, DOMAIN),
        )
    with overview_stack(testdb, db, tmp_path, ["chat"]) as stack:
        wait = WebDriverWait(browser, 30)
        browser.get(f"{stack.base}/overview#token={stack.token}")  # a member, not an admin
        section = wait.until(
            lambda d: (found := d.find_element(By.ID, "alerts-view")).is_displayed() and found
        )
        (alert,) = section.find_elements(By.CSS_SELECTOR, "#alerts > li")
        assert f"Sending from {DOMAIN} is paused by the breaker" in str(alert.text)
        assert serious_violations(browser) == [], "the breaker's alert"
        alert.find_element(By.TAG_NAME, "button").click()
        wait.until(lambda d: "admin role" in d.find_element(By.ID, "alerts").text)
        with db.transaction(ORG) as cur:
            status = fetch_value(cur, "SELECT status FROM sender_pauses")
        assert status == "paused"

        admin = mint_local_token(tmp_path, ORG, "user_admin", org_claim="v2")
        browser.get("about:blank")  # a new fragment alone would not load the page again
        browser.get(f"{stack.base}/overview#token={admin}")
        button = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "#alerts > li button"))
        button.click()
        wait.until(lambda d: d.find_element(By.ID, "alerts").get_attribute("data-count") == "0")
        with db.transaction(ORG) as cur:
            row = fetch_one(cur, "SELECT status, resumed_by FROM sender_pauses")
        assert (row["status"], row["resumed_by"]) == ("resumed", "user_admin")
