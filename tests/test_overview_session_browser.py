"""/overview sessions that last (issue 20 item 3), in a real headless Chromium against the real
chat function and a stand-in for Clerk's Frontend API (``colony.testing.clerk_server``).

The person signs in at "Clerk" (the stand-in sets its client cookie and sends them to the
page); the page finds the session through ``GET /v1/client``, and from then on refreshes its
3-second session tokens at ``POST /v1/client/sessions/<sid>/tokens`` before each expires. The
chat function verifies every token through the stand-in's JWKS, with its issuer, the page's
origin as ``azp`` and no clock-skew leeway (``COLONY_JWT_LEEWAY_SECONDS=0``), so a token used
after its ``exp`` is refused. Decisions made across several expiries land as the person's;
when Clerk stops refreshing (the session was ended), the next call's 401 shows "Your session
ended — sign in again" with the sign-in form, and nothing is decided; once the person signs
in at Clerk again, the page carries on where it was.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import requests
from selenium import webdriver
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from colony.local.queue_seed import seed_queue
from colony.store import fetch_one
from colony.testing.clerk_server import ClerkFrontendServer
from tests.axe import serious_violations
from tests.conftest import PgDB, wait_for
from tests.overview_stack import ORG, demo_db, overview_stack

TTL = 3
USER = "user_2ana"


def status_of(db: Any, item_id: str) -> tuple[str, str | None]:
    with db.transaction(ORG) as cur:
        row = fetch_one(
            cur, "SELECT status, decided_by FROM approval_items WHERE id = %s", (item_id,)
        )
    assert row is not None
    return str(row["status"]), row["decided_by"]


def current(driver: webdriver.Chrome) -> str:
    found = driver.find_elements(By.CSS_SELECTOR, "#queue .qcard.current")
    return str(found[0].get_attribute("data-id")) if found else ""


@pytest.fixture
def clerk() -> Iterator[ClerkFrontendServer]:
    """Requested before ``browser``, so it closes after the browser has quit (a connection
    Chromium opened ahead and never used would otherwise hold its close for seconds)."""
    with ClerkFrontendServer(ttl_seconds=TTL) as server:
        yield server


@pytest.mark.covers("fn:chat")
def test_clerk_tokens_are_refreshed_before_they_expire_and_a_401_asks_to_sign_in_again(
    testdb: PgDB, tmp_path: Path, clerk: ClerkFrontendServer, browser: webdriver.Chrome
) -> None:
    db = demo_db(testdb)
    seeded = seed_queue(db, ORG, 12)

    def clerk_env(urls: Mapping[str, str]) -> dict[str, str]:
        return {
            "COLONY_CLERK_FRONTEND_API": clerk.url,
            "COLONY_JWT_JWKS_URL": clerk.jwks_url,
            "COLONY_JWT_ISSUER": clerk.url,
            "COLONY_JWT_AUTHORIZED_PARTIES": urls["chat"],
            "COLONY_JWT_LEEWAY_SECONDS": "0",
        }

    with overview_stack(testdb, db, tmp_path, ["chat", "send"], env=clerk_env) as stack:
        policy = requests.get(f"{stack.base}/overview", timeout=10).headers[
            "Content-Security-Policy"
        ]
        assert f"connect-src 'self' {clerk.url}" in policy, policy
        wait = WebDriverWait(browser, 30)
        browser.get(clerk.sign_in_url(USER, ORG, f"{stack.base}/overview"))
        wait.until(
            lambda d: d.find_element(By.ID, "queue").get_attribute("data-complete") == "true"
        )
        assert browser.find_element(By.ID, "queue-count").text.startswith("12 pending")
        first = clerk.refreshes()
        assert first and first[0]["azp"] == stack.base, first

        # Several expiries: each new token is asked for before the one in use expires,
        # and a decision made after each is accepted, as the person's.
        browser.find_element(By.ID, "queue-h").click()
        decided = []
        for n in range(1, 5):
            wait_for(lambda n=n: len(clerk.refreshes()) > n, 3 * TTL, f"refresh {n}")
            ActionChains(browser).send_keys("j").perform()
            target = current(browser)
            ActionChains(browser).send_keys("a").perform()
            wait_for(lambda t=target: status_of(db, t)[0] != "pending", 20, "the decision")
            decided.append(target)
        minted = clerk.refreshes()
        for before, after in itertools.pairwise(minted):
            assert after["at"] < before["exp"], "a token was refreshed after it expired"
        expired = [c for c in minted if c["exp"] <= time.time()]
        assert len(expired) >= 3, "the decisions spanned several expiries"
        for item_id in decided:
            assert status_of(db, item_id) == ("applied", USER)
        assert len(set(decided)) == 4 and set(decided) <= set(seeded.ids)

        # The session ends at Clerk: the next refresh is refused, the token runs out,
        # and the next call's 401 (retried once after a refresh, refused again) asks the
        # person to sign in again. Nothing was decided.
        clerk.end_sessions()
        wait_for(lambda: clerk.refusals >= 1, 3 * TTL, "the refused refresh")
        last = clerk.refreshes()[-1]["exp"]
        wait_for(lambda: time.time() >= last + 1, 3 * TTL, "the last token to expire")
        ActionChains(browser).send_keys("j").perform()
        target = current(browser)
        ActionChains(browser).send_keys("a").perform()
        heading = browser.find_element(By.ID, "signin-h")
        wait.until(lambda d: heading.is_displayed())
        assert heading.get_attribute("textContent") == "Your session ended — sign in again"
        assert browser.find_element(By.ID, "signin-why").is_displayed()
        assert browser.find_element(By.ID, "token-input").is_displayed()
        assert not browser.find_element(By.ID, "app").is_displayed()
        assert clerk.refusals >= 2, "the 401 was retried after one more refresh"
        assert status_of(db, target) == ("pending", None)
        assert serious_violations(browser) == [], "the session-ended view"

        # Signing in again at Clerk (another tab) and continuing: the page carries on where
        # it was, and the decision the 401 stopped is made as the person's.
        page = browser.current_window_handle
        browser.switch_to.new_window("tab")
        browser.get(clerk.sign_in_url(USER, ORG, f"{stack.base}/overview"))
        wait.until(lambda d: d.current_url.startswith(stack.base))
        browser.close()
        browser.switch_to.window(page)
        browser.find_element(By.ID, "clerk-retry").click()
        wait.until(lambda d: d.find_element(By.ID, "app").is_displayed())
        assert current(browser) == target
        ActionChains(browser).send_keys("a").perform()
        wait_for(lambda: status_of(db, target) == ("applied", USER), 20, "the decision again")
