"""/overview's alerts (issue 39 item 3), in a real headless Chromium against the real chat
function and the embedded PostgreSQL: a paused sending domain is shown above the queue with
why and the TXT records that mend it, as copyable text; a domain that passes raises nothing,
and the section is hidden. axe-core finds no serious or critical violation with it shown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

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
