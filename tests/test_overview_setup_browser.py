"""/overview's Setup view (issue 34 item 4) in a real headless Chromium against the real chat
function and the embedded PostgreSQL with the demo org: its admin edits the ICP's anti-ICP
rules, a sequence step and the sending limits by keyboard; each impossible value comes back
from the server with its message beside the field it concerns (that field marked invalid and
focused), and once mended it is saved, as a new ICP version and on the audit log as the
person's. A member without the admin role sees no forms. axe-core finds no serious or
critical violation, with the errors shown or not. The screenshot is
``artifacts/overview-setup.png`` (git-ignored): a refused anti-ICP rule, its message beside
the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from colony.local.tokens import mint_local_token
from colony.store import fetch_all
from tests.axe import serious_violations
from tests.conftest import PgDB
from tests.overview_stack import ORG, demo_db, overview_stack, screenshot

pytestmark = pytest.mark.covers("fn:chat", "ENT-010", "ENT-004")


def words(node: Any) -> str:
    return str(node.get_attribute("textContent"))


def at(driver: Any, field: str) -> Any:
    return driver.find_element(By.CSS_SELECTOR, f'#setup-forms [data-field="{field}"]')


def beside(driver: Any, field: str) -> str:
    """The message shown beside the control at ``field`` (the one it is described by)."""
    control = at(driver, field)
    return words(driver.find_element(By.ID, control.get_attribute("aria-describedby")))


def retype(control: Any, value: str) -> None:
    control.send_keys(Keys.CONTROL, "a")
    control.send_keys(Keys.DELETE)
    control.send_keys(value)


def submit(driver: Any, form: str) -> None:
    driver.find_element(By.CSS_SELECTOR, f"#setup-{form} button[type=submit]").send_keys(Keys.ENTER)


def test_an_admin_mends_each_fault_beside_its_field_and_saves(
    testdb: PgDB, tmp_path: Path, browser: webdriver.Chrome
) -> None:
    db = demo_db(testdb)
    with overview_stack(testdb, db, tmp_path, ["chat"]) as stack:
        admin = mint_local_token(tmp_path, ORG, user_id="user_ada", org_claim="v2")
        wait = WebDriverWait(browser, 30)
        browser.get(f"{stack.base}/overview#token={admin}")
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#setup-settings form"))
        assert browser.find_element(By.ID, "setup-note").is_displayed() is False

        # An anti-ICP rule whose operator needs a number, given a word: the server's rule.
        op = at(browser, "anti_icp_rules.1.op")
        op.send_keys("lt")  # a select takes the typed option, as a keyboard user picks it
        assert op.get_attribute("value") == "lt"
        value = at(browser, "anti_icp_rules.1.value")
        retype(value, "many")
        submit(browser, "icp")
        summary = browser.find_element(By.CSS_SELECTOR, "#setup-icp .sf-summary")
        wait.until(lambda d: summary.is_displayed())
        assert words(summary) == "Not saved: 1 field to correct, each marked beside it."
        value = at(browser, "anti_icp_rules.1.value")
        assert value.get_attribute("aria-invalid") == "true"
        said = beside(browser, "anti_icp_rules.1.value")
        assert "(op 'lt') needs a numeric value, got 'many'" in said
        assert browser.switch_to.active_element == value  # focus goes to what to mend
        assert beside(browser, "anti_icp_rules.0.value") == ""
        assert serious_violations(browser) == [], "the Setup view, a fault shown"
        screenshot(browser, "overview-setup", at(browser, "anti_icp_rules.1"))  # the fault
        retype(value, "40")
        submit(browser, "icp")
        wait.until(lambda d: words(d.find_element(By.ID, "setup-status")) == "ICP saved")
        assert at(browser, "anti_icp_rules.1.value").get_attribute("aria-invalid") is None

        # A new rule, by keyboard alone: Add puts the focus in its first field, Tab walks on.
        rules = len(
            browser.find_elements(
                By.CSS_SELECTOR, '[data-field^="anti_icp_rules."][data-field$=".id"]'
            )
        )
        form = browser.find_element(By.CSS_SELECTOR, "#setup-icp form")
        add = form.find_element(By.XPATH, ".//button[.='Add rule']")
        add.send_keys(Keys.ENTER)
        assert browser.switch_to.active_element == at(browser, f"anti_icp_rules.{rules}.id")
        for typed in ("AICP-99", "title", "contains", "intern", "Interns do not buy."):
            browser.switch_to.active_element.send_keys(typed, Keys.TAB)
        submit(browser, "icp")
        wait.until(EC.staleness_of(form))  # saved: the form is drawn again from the server
        assert at(browser, f"anti_icp_rules.{rules}.op").get_attribute("value") == "contains"

        # A sequence step delayed by a negative number of days: pydantic's loc, by the field.
        delay = at(browser, "sequences.0.steps.1.delay_days")
        retype(delay, "-2")
        submit(browser, "sequences")
        wait.until(lambda d: beside(d, "sequences.0.steps.1.delay_days"))
        assert "greater than or equal to 0" in beside(browser, "sequences.0.steps.1.delay_days")
        retype(at(browser, "sequences.0.steps.1.delay_days"), "5")
        submit(browser, "sequences")
        wait.until(lambda d: words(d.find_element(By.ID, "setup-status")) == "Sequences saved")

        # Sending limits that contradict each other: the model validator names the field.
        hourly = at(browser, "sending.per_domain_hourly")
        retype(hourly, "999")
        submit(browser, "settings")
        wait.until(lambda d: beside(d, "sending.per_domain_hourly"))
        assert beside(browser, "sending.per_domain_hourly") == "cannot exceed daily_cap"
        assert serious_violations(browser) == [], "the Setup view, settings refused"
        retype(at(browser, "sending.per_domain_hourly"), "3")
        submit(browser, "settings")
        wait.until(lambda d: words(d.find_element(By.ID, "setup-status")) == "Settings saved")
        assert serious_violations(browser) == [], "the Setup view, saved"

        # A member without the admin role: no forms (the API refuses them; tested over HTTP).
        member = mint_local_token(tmp_path, ORG, user_id="user_mo")
        browser.get("about:blank")  # a new page load: only the fragment differs
        browser.get(f"{stack.base}/overview#token={member}")
        wait.until(lambda d: d.find_element(By.ID, "setup-note").is_displayed())
        assert browser.find_elements(By.CSS_SELECTOR, "#setup-forms form") == []

    with db.transaction(ORG) as cur:
        rules = fetch_all(cur, "SELECT anti_icp_rules FROM icp_definitions WHERE active")
        steps = fetch_all(cur, "SELECT delay_days FROM sequences ORDER BY angle, tier, step")
        entries = fetch_all(
            cur,
            "SELECT actor, channel, action FROM audit_log WHERE action LIKE '%%.replace'"
            " ORDER BY id",
        )
    rule, added = rules[0]["anti_icp_rules"][1], rules[0]["anti_icp_rules"][-1]
    assert (rule["op"], rule["value"]) == ("lt", 40)
    assert added == {
        "id": "AICP-99",
        "field": "title",
        "op": "contains",
        "value": "intern",
        "reason": "Interns do not buy.",
    }
    assert steps[1]["delay_days"] == 5
    assert entries == [
        {"actor": "user_ada", "channel": "ui", "action": f"{what}.replace"}
        for what in ("icp", "icp", "sequences", "settings")
    ]
