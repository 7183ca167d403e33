"""A HubSpot conflict on /overview (issue 36 item 3), in a real headless Chromium against the
real chat function and the embedded PostgreSQL.

The write-back of an approved deal update found HubSpot's amount changed since the card read
it (``colony.flows.crm.deal_writes``; the card is queued here as it queues it, with its
payload). The person sees ours, what we read and HubSpot's now on the card, edits it to keep
HubSpot's, and our deal takes HubSpot's value; nothing is pushed to HubSpot. The screenshot is
``artifacts/overview-crm-conflict.png``.
"""

from __future__ import annotations

from pathlib import Path

from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from colony.store import fetch_all, fetch_one
from colony.store.approvals import approvals
from tests.axe import serious_violations
from tests.conftest import PgDB
from tests.overview_stack import ORG, demo_db, overview_stack, screenshot


def test_a_person_keeps_hubspots_value_from_the_conflict_card(
    testdb: PgDB, tmp_path: Path, browser: webdriver.Chrome
) -> None:
    db = demo_db(testdb)
    with db.transaction(ORG) as cur:
        deal = fetch_one(cur, "SELECT id, name, value FROM deals WHERE external_id = 'D-002'")
        assert deal is not None
        field = {
            "field": "value",
            "crm_field": "amount",
            "ours": "313500.00",
            "ours_crm": "313500.00",
            "read": "285000.00",
            "read_at": "2026-01-05T09:00:03.000Z",
            "theirs": "290000.00",
            "theirs_ours": "290000.00",
            "changed_at": "2026-01-06T10:30:00.000Z",
        }
        payload = {"deal_id": deal["id"], "crm_deal": "9002", "push_id": "p-1", "keep": "ours"}
        payload["fields"] = [field]
        item = approvals.add(cur, ORG, "crm_conflict", "crm", payload, subject_id=deal["id"])

    with overview_stack(testdb, db, tmp_path, ["chat"]) as stack:
        wait = WebDriverWait(browser, 30)
        browser.get(f"{stack.base}/overview#token={stack.token}")
        browser.refresh()
        wait.until(
            lambda d: d.find_element(By.ID, "queue").get_attribute("data-complete") == "true"
        )
        card = browser.find_element(By.CSS_SELECTOR, f'#queue .qcard[data-id="{item}"]')
        text = str(card.get_attribute("textContent"))
        for shown in ("HubSpot conflict", deal["name"], "9002", "Ours", "We read", "HubSpot now"):
            assert shown in text, shown
        for value in ("313500.00", "285000.00", "290000.00", "2026-01-06 10:30 UTC"):
            assert value in text, value
        buttons = [b.text for b in card.find_elements(By.CSS_SELECTOR, ".qactions button")]
        assert buttons == ["Keep the chosen values", "Leave both as they are", "Edit"]
        assert serious_violations(browser) == [], "a conflict card"
        screenshot(browser, "overview-crm-conflict", of=card)
        card.find_element(By.CSS_SELECTOR, "[data-action=edit]").click()
        keep = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "form.qedit input"))
        keep.clear()
        keep.send_keys("theirs")
        card.find_element(By.CSS_SELECTOR, "form.qedit button[type=submit]").click()
        wait.until(lambda d: not d.find_elements(By.CSS_SELECTOR, f'.qcard[data-id="{item}"]'))

    with db.transaction(ORG) as cur:
        decided = fetch_one(cur, "SELECT status FROM approval_items WHERE id = %s", (item,))
        after = fetch_one(cur, "SELECT value FROM deals WHERE id = %s", (deal["id"],))
        pushes = fetch_all(cur, "SELECT id FROM crm_pushes")
    assert decided == {"status": "applied"}
    assert str(after["value"]) == "290000.00"  # HubSpot's, kept by the person
    assert pushes == []  # keeping theirs writes nothing to HubSpot
