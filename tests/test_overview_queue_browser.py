"""The /overview approval queue in a real headless Chromium, against the real chat and send
functions and the embedded PostgreSQL (issue 20 item 1 and its "Bad input").

One stack, one queue of every kind (``colony.local.queue_seed``, hostile text planted), and
a person working through it: cards that show what they decide on, keys, edit in place, a
bulk decision with one confirmation, filters, another person's decisions arriving live, and
a decision that loses a race to someone else's. Every decision made from a card is checked
in ``approval_items`` and in the audit log. The screenshots are ``artifacts/overview-signin.png``
and ``artifacts/overview-queue.png`` (git-ignored).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import requests
from selenium import webdriver
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select, WebDriverWait

from colony.flows.approvals.approval import Actor, decide
from colony.local.queue_seed import HOSTILE_SUBJECT, seed_queue
from colony.settings import Settings
from colony.store import Database, fetch_all, fetch_one, fetch_value
from colony.store.campaigns import signals
from colony.store.tenants import members
from colony.testing.inline import InlineTransport, local_deps
from tests.axe import serious_violations
from tests.conftest import PgDB, wait_for
from tests.overview_stack import ORG, demo_db, overview_stack, screenshot

ITEMS = 30
QUOTE = "<i>we are</i> opening three pavilions"
LACKED = ["contact.signals", "<b>company.size</b>"]


def item(db: Database, item_id: str) -> dict[str, Any]:
    with db.transaction(ORG) as cur:
        row = fetch_one(
            cur,
            "SELECT status, decided_by, edited_payload FROM approval_items WHERE id = %s",
            (item_id,),
        )
    assert row is not None
    return dict(row)


def audit(db: Database, item_id: str) -> list[tuple[str, str, str, str]]:
    with db.transaction(ORG) as cur:
        rows = fetch_all(
            cur,
            "SELECT event, actor, channel, action FROM audit_log WHERE approval_item_id = %s"
            " ORDER BY id",
            (item_id,),
        )
    return [(r["event"], r["actor"], r["channel"], r["action"]) for r in rows]


def plant_signal_objects(db: Database, item_id: str) -> None:
    """Store a signal with a quote and its provenance (markup in the quote) for the draft's
    contact, as AGT-003's step does (``store.campaigns.signals``), and give the draft the agent's
    ``missing_data``."""
    with db.transaction(ORG) as cur:
        row = fetch_one(
            cur,
            "SELECT c.id, c.signals FROM approval_items a"
            " JOIN contacts c ON c.id = a.payload->>'contact_id' WHERE a.id = %s",
            (item_id,),
        )
        assert row is not None
        first = row["signals"][0]
        signals.replace_for_contact(
            cur,
            ORG,
            row["id"],
            [
                {
                    "type": first["type"],
                    "detail": first["detail"],
                    "quote": QUOTE,
                    "source": "https://news.example/mercy-ridge",
                    "confidence": 0.82,
                    "observed_on": "2026-10-10",
                }
            ],
            run_id=None,
        )
        cur.execute(
            "UPDATE approval_items SET payload = payload || %s::jsonb WHERE id = %s",
            (json.dumps({"missing_data": LACKED}), item_id),
        )


def card(driver: webdriver.Chrome, item_id: str) -> Any:
    return driver.find_element(By.CSS_SELECTOR, f'#queue .qcard[data-id="{item_id}"]')


def words(node: Any) -> str:
    """What a node says, as written (``.text`` applies CSS text-transform)."""
    return str(node.get_attribute("textContent"))


def press(driver: webdriver.Chrome, node: Any) -> None:
    """Scroll ``node`` to the middle of its scroller, as a person would, and click it."""
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", node)
    node.click()


def gone(item_id: str) -> Any:
    return lambda d: not d.find_elements(By.CSS_SELECTOR, f'#queue .qcard[data-id="{item_id}"]')


def current_id(driver: webdriver.Chrome) -> str:
    return str(
        driver.find_element(By.CSS_SELECTOR, "#queue .qcard.current").get_attribute("data-id")
    )


def test_queue_cards_are_decided_in_place(
    testdb: PgDB, tmp_path: Path, browser: webdriver.Chrome
) -> None:
    db = demo_db(testdb)
    deps = local_deps(Settings.from_env({}), db, InlineTransport())  # the other person's
    seeded = seed_queue(db, ORG, ITEMS, hostile=True)
    plant_signal_objects(db, seeded.outbound[0])
    with db.transaction(ORG) as cur:  # issue 35: the deal updates wait in the viewer's queue
        members.join(cur, ORG, "local-user", "org:member", None, "Local User")
        cur.execute(
            "UPDATE approval_items SET assignee = 'local-user'"
            " WHERE kind = 'deal_update' AND status = 'pending'"
        )
    with overview_stack(testdb, db, tmp_path, ["chat", "send"]) as stack:
        base = stack.base
        page = requests.get(f"{base}/overview", timeout=10)
        assert page.headers["Content-Security-Policy"].endswith("connect-src 'self'")
        assert b"<body>" in page.content, "no Clerk: the page takes pasted tokens"
        wait = WebDriverWait(browser, 30)
        browser.get(f"{base}/overview")  # no token yet: the sign-in view
        wait.until(ec.visibility_of_element_located((By.ID, "signin")))
        assert serious_violations(browser) == [], "the sign-in view"
        screenshot(browser, "overview-signin")
        browser.get(f"{base}/overview#token={stack.token}")
        browser.refresh()  # the hash alone is no new document
        wait.until(
            lambda d: d.find_element(By.ID, "queue").get_attribute("data-complete") == "true"
        )
        assert browser.find_element(By.ID, "queue-count").text.startswith(f"{ITEMS} pending")
        assert len(browser.find_elements(By.CSS_SELECTOR, "#queue .qcard")) == ITEMS
        assert serious_violations(browser) == [], "the queue view"

        # Bad input: markup and a script render as text, a 5,000-character word wraps.
        hostile = card(browser, seeded.hostile[0])
        assert hostile.find_element(By.TAG_NAME, "h3").text == HOSTILE_SUBJECT
        assert "<script>window.__pwned=1</script>" in words(hostile)
        assert not browser.find_elements(By.CSS_SELECTOR, "#queue img, #queue script, #queue b")
        assert browser.execute_script("return window.__pwned") is None
        assert "Untrusted text behind this item" in words(hostile)
        assert '<a href="#x">click</a>' in words(hostile)
        assert not hostile.find_elements(By.CSS_SELECTOR, "a")
        widths = browser.execute_script(
            "const q = document.getElementById('queue'), c = arguments[0];"
            " return [q.scrollWidth, q.clientWidth, c.scrollWidth, c.clientWidth];",
            hostile,
        )
        assert widths[0] <= widths[1] and widths[2] <= widths[3], widths

        # What each kind shows.
        draft = card(browser, seeded.outbound[0])
        text = words(draft)
        for shown in ("Outbound message", "Tier", "T1", "Angle", "Signal", "Signal used"):
            assert shown in text
        with db.transaction(ORG) as cur:
            contact = fetch_one(
                cur,
                "SELECT c.name, c.company FROM approval_items a"
                " JOIN contacts c ON c.id = a.payload->>'contact_id' WHERE a.id = %s",
                (seeded.outbound[0],),
            )
        assert contact is not None
        assert contact["name"] in text and contact["company"] in text
        assert "Prospect's signals" in text and "Exemplars used" in text
        # A signal's quote and provenance, and what the agent lacked: text, never markup.
        assert QUOTE in text and "source: https://news.example/mercy-ridge" in text
        assert "confidence 82%" in text and "observed 2026-10-10" in text
        assert "Missing data: the agent had no value for" in text
        assert all(name in text for name in LACKED)
        assert not draft.find_elements(By.CSS_SELECTOR, "i, b, a")
        assert "✓ CONST-006" in text, text
        assert "Campaign: Signal · T1 health systems" in text
        kinds = {
            c.get_attribute("data-kind"): c
            for c in browser.find_elements(By.CSS_SELECTOR, "#queue .qcard")
        }
        deal = words(kinds["deal_update"])
        assert "Now" in deal and "Proposed" in deal and "negotiation" in deal
        assert "Target domain" in words(kinds["kc_update_candidate"])
        assert "KC-04" in words(kinds["kc_update_candidate"])
        assert "this kit has no stored document" in words(kinds["deployment_kit"])
        assert not kinds["deployment_kit"].find_elements(By.CSS_SELECTOR, "[data-action=edit]")

        # Keys: j / k move, a approves, r rejects (the focus stays in the queue).
        browser.find_element(By.ID, "queue-h").click()
        keys = ActionChains(browser)
        keys.send_keys("j").perform()
        first = current_id(browser)
        keys.send_keys("j").perform()
        second = current_id(browser)
        keys.send_keys("k").perform()
        assert current_id(browser) == first != second
        keys.send_keys("a").perform()
        wait.until(gone(first))
        assert current_id(browser) == second, "the next card takes the focus"
        keys.send_keys("r").perform()
        wait.until(gone(second))
        assert (
            item(db, first)["status"] == "applied" and item(db, first)["decided_by"] == "local-user"
        )
        assert item(db, second)["status"] == "rejected"
        assert ("decision", "local-user", "ui", "approve") in audit(db, first)
        assert ("decision", "local-user", "ui", "reject") in audit(db, second)
        wait.until(
            lambda d: d.find_element(By.ID, "queue-count").text.startswith(f"{ITEMS - 2} pending")
        )

        # Edit in place: only what the kind allows; saving approves the edited draft.
        target = next(i for i in seeded.outbound if i not in (first, second))
        press(browser, card(browser, target).find_element(By.CSS_SELECTOR, "[data-action=edit]"))
        form = card(browser, target).find_element(By.CSS_SELECTOR, "form.qedit")
        labels = [label.text for label in form.find_elements(By.TAG_NAME, "label")]
        assert labels == ["Subject", "Body"]
        assert serious_violations(browser) == [], "a card being edited"
        subject = form.find_element(By.CSS_SELECTOR, "input")
        subject.clear()
        subject.send_keys("A shorter subject")
        press(browser, form.find_element(By.CSS_SELECTOR, "button[type=submit]"))
        wait.until(gone(target))
        edited = item(db, target)
        assert edited["status"] == "applied"
        assert edited["edited_payload"]["subject"] == "A shorter subject"
        assert ("decision", "local-user", "ui", "edit") in audit(db, target)

        # Filters by kind and campaign.
        Select(browser.find_element(By.ID, "filter-kind")).select_by_value("deal_update")
        shown = browser.find_elements(By.CSS_SELECTOR, "#queue .qcard")
        assert shown and {c.get_attribute("data-kind") for c in shown} == {"deal_update"}
        Select(browser.find_element(By.ID, "filter-kind")).select_by_value("")
        Select(browser.find_element(By.ID, "filter-campaign")).select_by_value(seeded.campaign_id)
        shown = browser.find_elements(By.CSS_SELECTOR, "#queue .qcard")
        assert shown and {c.get_attribute("data-kind") for c in shown} == {"outbound_message"}
        Select(browser.find_element(By.ID, "filter-campaign")).select_by_value("")
        # "Mine only": the items routed to the signed-in person, each saying so
        press(browser, browser.find_element(By.ID, "filter-mine"))
        shown = browser.find_elements(By.CSS_SELECTOR, "#queue .qcard")
        assert shown and {c.get_attribute("data-kind") for c in shown} == {"deal_update"}
        assert all("for you" in words(c) for c in shown)
        press(browser, browser.find_element(By.ID, "filter-mine"))
        assert len(browser.find_elements(By.CSS_SELECTOR, "#queue .qcard")) > len(shown)

        # Bulk: three selected, one confirmation, three decisions on record.
        picked = [
            c.get_attribute("data-id")
            for c in browser.find_elements(By.CSS_SELECTOR, "#queue .qcard")
        ][:3]
        for item_id in picked:
            press(browser, card(browser, item_id).find_element(By.CSS_SELECTOR, ".pick"))
        bulk = browser.find_element(By.ID, "bulk-approve")
        assert bulk.text == "Approve selected (3)"
        bulk.click()
        dialog = wait.until(ec.visibility_of_element_located((By.ID, "confirm")))
        assert "Approve 3 selected items?" in dialog.text
        assert serious_violations(browser) == [], "the bulk confirmation"
        browser.find_element(By.ID, "confirm-yes").click()
        for item_id in picked:
            wait.until(gone(item_id))
            assert item(db, item_id)["status"] == "applied"
            assert ("decision", "local-user", "ui", "approve") in audit(db, item_id)

        # Someone else decides: the card leaves, the count follows, the page says who.
        left = [
            c.get_attribute("data-id")
            for c in browser.find_elements(By.CSS_SELECTOR, "#queue .qcard")
        ]
        other = left[-1]
        decide(deps, ORG, other, "reject", actor=Actor("user_other", "ui"))
        wait.until(gone(other))
        wait.until(lambda d: "rejected by user_other" in d.find_element(By.ID, "others").text)
        remaining = ITEMS - 2 - 1 - 3 - 1
        wait.until(
            lambda d: d.find_element(By.ID, "queue-count").text.startswith(f"{remaining} pending")
        )

        # A race lost to someone else: the card says who decided and when; no 5xx.
        raced = left[0]
        held, release = threading.Event(), threading.Event()

        def hold() -> None:  # a transaction that holds the row, so both decisions queue
            with db.transaction(ORG) as cur:
                cur.execute("SELECT id FROM approval_items WHERE id = %s FOR UPDATE", (raced,))
                held.set()
                release.wait(60)

        def rival() -> None:
            decide(deps, ORG, raced, "reject", actor=Actor("user_other", "ui"))

        threads = [threading.Thread(target=hold)]
        threads[0].start()
        assert held.wait(30)
        threads.append(threading.Thread(target=rival))
        threads[1].start()
        wait_for(lambda: waiting(db) >= 1, 30, "the rival decision to wait for the row")
        press(browser, card(browser, raced).find_element(By.CSS_SELECTOR, "[data-action=approve]"))
        wait_for(lambda: waiting(db) >= 2, 30, "the card's decision to wait for the row")
        release.set()
        for thread in threads:
            thread.join(30)
        note = card(browser, raced).find_element(By.CSS_SELECTOR, ".qstatus")
        wait.until(lambda d: "Already rejected by user_other at" in note.text)
        assert (
            item(db, raced)["status"] == "rejected"
            and item(db, raced)["decided_by"] == "user_other"
        )
        trail = audit(db, raced)
        assert ("decision", "user_other", "ui", "reject") in trail
        assert ("refusal", "local-user", "ui", "approve") in trail, trail
        assert not card(browser, raced).find_elements(By.CSS_SELECTOR, "[data-action=approve]")

        screenshot(browser, "overview-queue")
        errors = [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]
        assert all("409" in e for e in errors), errors  # the lost race, and nothing else
        resources = browser.execute_script(
            "return performance.getEntriesByType('resource').map(e => e.name)"
        )
        assert all(url.startswith(base) for url in resources), resources


def waiting(db: Database) -> int:
    """Backends waiting for a lock (pg_locks is readable by every role)."""
    with db.transaction(ORG) as cur:
        return int(fetch_value(cur, "SELECT count(*) FROM pg_locks WHERE NOT granted"))


def built(driver: webdriver.Chrome) -> int:
    return len(driver.find_elements(By.CSS_SELECTOR, "#queue .qcard"))


def test_five_hundred_items_build_only_the_cards_near_the_view(
    testdb: PgDB, tmp_path: Path, browser: webdriver.Chrome
) -> None:
    """Issue 20 item 4: the first screen is drawn from a short first listing; the whole
    listing then arrives, but only the cards near the view are built (more as the list
    scrolls), while keys, filters, counts and bulk decisions work over all 500. (Timings:
    the benchmark, ``bench/overview.py``.)"""
    db = demo_db(testdb)
    seed_queue(db, ORG, 440)
    small = seed_queue(db, ORG, 60)  # a campaign of 48 drafts: more than one window builds
    with overview_stack(testdb, db, tmp_path, ["chat", "send"]) as stack:
        base = stack.base
        wait = WebDriverWait(browser, 60)
        browser.get(f"{base}/overview#token={stack.token}")
        wait.until(
            lambda d: d.find_element(By.ID, "queue").get_attribute("data-complete") == "true"
        )
        assert browser.find_element(By.ID, "queue-count").text.startswith("500 pending")
        listed = browser.execute_script(
            "return performance.getEntriesByType('resource')"
            ".filter(e => e.name.includes('/approvals?')).map(e => e.name.split('?')[1])"
        )
        assert listed[:2] == ["limit=20", "limit=500"], listed
        marks = browser.execute_script(
            "const m = {}; for (const e of performance.getEntriesByType('mark'))"
            " m[e.name] = e.startTime; return m;"
        )
        assert marks["colony:queue-first"] < marks["colony:queue-complete"]
        window = built(browser)
        assert 12 <= window <= 60, window
        assert "Showing" in browser.find_element(By.ID, "queue-more").text
        cards = browser.find_elements(By.CSS_SELECTOR, "#queue .qcard")
        style = browser.execute_script(
            "return getComputedStyle(arguments[0]).contentVisibility", cards[-1]
        )
        assert style == "auto", "off-screen cards are not laid out"

        # Keys reach past what is built: the 70th item is built, focused and decided by key.
        browser.find_element(By.ID, "queue-h").click()
        keys = ActionChains(browser)
        for _ in range(70):
            keys.send_keys("j")
        keys.perform()
        target = current_id(browser)
        order = [
            c.get_attribute("data-id")
            for c in browser.find_elements(By.CSS_SELECTOR, "#queue .qcard")
        ]
        assert order.index(target) == 69 and len(order) > window
        assert browser.switch_to.active_element.get_attribute("data-id") == target
        ActionChains(browser).send_keys("a").perform()
        wait.until(gone(target))
        assert item(db, target)["status"] in ("applied", "refused"), item(db, target)
        wait.until(lambda d: d.find_element(By.ID, "queue-count").text.startswith("499 pending"))

        # Scrolling to the end of what is built builds more.
        before = built(browser)
        browser.execute_script(
            "const q = document.getElementById('queue'); q.scrollTop = q.scrollHeight;"
        )
        wait.until(lambda d: built(d) > before)

        # "Select all shown" over a filter acts on the whole filtered listing, built or not.
        Select(browser.find_element(By.ID, "filter-campaign")).select_by_value(small.campaign_id)
        drafts = [i for i in small.outbound if item(db, i)["status"] == "pending"]
        assert len(drafts) >= 47
        wait.until(lambda d: 0 < built(d) < len(drafts))
        browser.find_element(By.ID, "select-all").click()
        bulk = browser.find_element(By.ID, "bulk-approve")
        assert bulk.text == f"Approve selected ({len(drafts)})"
        bulk.click()
        wait.until(ec.visibility_of_element_located((By.ID, "confirm")))
        browser.find_element(By.ID, "confirm-yes").click()
        wait_for(lambda: all(item(db, i)["status"] == "applied" for i in drafts), 60, "every draft")
        assert ("decision", "local-user", "ui", "approve") in audit(db, drafts[-1])
        wait.until(
            lambda d: d.find_element(By.ID, "queue-count").text.startswith(
                f"{499 - len(drafts)} pending"
            )
        )
