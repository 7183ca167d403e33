"""Calls as records (issue 34 item 1) over real HTTP: the chat function served by
functions-framework, the embedded PostgreSQL, the transcript in a bucket of the GCS emulator
(``gcp-storage-emulator``, read through the same store as production), two tenants.

A call's page carries its transcript with each pass-1 signal marked where it was said (word
for word, whitespace normalised, as AGT-006's quotes are checked), the summary, and the
recommendations its run queued with their decisions; a call whose transcript was erased
says so; another org sees none of it. Then the same in Chromium: the marks are ``<mark>``
elements around the quoted words, the transcript's planted markup is text, and axe-core
finds no serious violation.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from colony.flows.insights.calls import marks
from colony.local.tokens import mint_local_token
from colony.store import Database
from tests.axe import serious_violations
from tests.conftest import Gcs, PgDB
from tests.overview_stack import overview_stack, screenshot

pytestmark = pytest.mark.covers("fn:chat", "ENT-006")

ORG, OTHER = "org_calls", "org_calls_other"
TRANSCRIPT = (
    "Ana: Thanks for joining.\nDana: Our board approved the   new campus budget last week.\n"
    "Dana: We still run <b>spreadsheets</b> for inspections.\nAna: Understood."
)
SIGNALS = [
    {
        "type": "budget",
        "detail": "Budget approved",
        "quote": "board approved the new campus budget",
    },
    {"type": "pain", "detail": "Manual inspections", "quote": "We still run <b>spreadsheets</b>"},
    {"type": "pain", "detail": "Never said", "quote": "we love our current vendor"},
]


def seed(db: Database, gcs: Gcs) -> dict[str, str]:
    uri = gcs.store.put(f"transcripts/{ORG}/f1.txt", TRANSCRIPT.encode(), "text/plain")  # type: ignore[attr-defined]
    ids: dict[str, str] = {}
    for org in (ORG, OTHER):
        with db.transaction(org) as cur:
            cur.execute("INSERT INTO organizations (id, name) VALUES (%s, %s)", (org, org))
    with db.transaction(ORG) as cur:
        cur.execute(
            "INSERT INTO deals (org_id, name, stage) VALUES (%s, 'MercyRidge campus', 'demo')"
            " RETURNING id",
            (ORG,),
        )
        deal = ids["deal"] = cur.fetchone()[0]
        cur.execute(
            "INSERT INTO deals (org_id, name, stage, value) VALUES (%s, 'Lakeshore pilot',"
            " 'closed_won', 12000), (%s, 'Harbor rollout', 'demo', 50000)",
            (ORG, ORG),
        )
        cur.execute(
            "INSERT INTO recordings (org_id, deal_id, source_file_id, title, transcript_uri,"
            " status, signals, summary, processed_at) VALUES (%s, %s, 'f1', 'MercyRidge demo',"
            " %s, 'processed', %s::jsonb, 'Budget approved; inspections are manual.', now())"
            " RETURNING id",
            (ORG, deal, uri, json.dumps(SIGNALS)),
        )
        ids["call"] = cur.fetchone()[0]
        cur.execute(
            "INSERT INTO recordings (org_id, source_file_id, title, transcript_uri, status,"
            " created_at) VALUES (%s, 'f2', 'Erased call', %s, 'processed',"
            " now() - interval '1 day') RETURNING id",
            (ORG, f"gs://{gcs.bucket}/transcripts/{ORG}/gone.txt"),
        )
        ids["erased"] = cur.fetchone()[0]
        for kind, agent, status in (
            ("deal_update", "AGT-006", "approved"),
            ("follow_up", "AGT-007", "pending"),
        ):
            cur.execute(
                "INSERT INTO approval_items (org_id, kind, status, source_agent, run_id, payload,"
                " decided_by, decided_at) VALUES (%s, %s, %s, %s, %s, '{}'::jsonb, %s,"
                " CASE WHEN %s = 'approved' THEN now() END)",
                (
                    ORG,
                    kind,
                    status,
                    agent,
                    f"rec:{ids['call']}",
                    "user_ana" if status == "approved" else None,
                    status,
                ),
            )
    return ids


def test_marks_follow_the_quotes_word_for_word() -> None:
    found = marks(TRANSCRIPT, SIGNALS)
    assert [(m["signal"], TRANSCRIPT[m["start"] : m["end"]]) for m in found] == [
        (0, "board approved the   new campus budget"),
        (1, "We still run <b>spreadsheets</b>"),
    ]  # the third was never said: not marked
    nested = marks("a b c d", [{"quote": "a b c"}, {"quote": "b c"}, {"quote": "d"}])
    assert [(m["signal"], m["start"], m["end"]) for m in nested] == [(0, 0, 5), (2, 6, 7)]


def test_a_call_page_over_http(testdb: PgDB, gcs: Gcs, tmp_path: Path) -> None:
    db = testdb.app()
    ids = seed(db, gcs)
    with overview_stack(testdb, db, tmp_path, ["chat"], env=lambda _: gcs.env) as stack:
        mine = {"Authorization": f"Bearer {mint_local_token(tmp_path, ORG)}"}
        theirs = {"Authorization": f"Bearer {mint_local_token(tmp_path, OTHER)}"}
        with httpx.Client(base_url=stack.base, timeout=30) as http:
            listed = http.get("/calls", headers=mine).json()
            assert [(c["title"], c["deal"], c["signals"]) for c in listed["calls"]] == [
                ("MercyRidge demo", "MercyRidge campus", 3),  # newest first
                ("Erased call", None, 0),
            ]
            page: dict[str, Any] = http.get(f"/calls/{ids['call']}", headers=mine).json()
            assert page["transcript"] == TRANSCRIPT
            assert page["call"]["summary"] == "Budget approved; inspections are manual."
            assert page["call"]["deal_stage"] == "demo"
            assert [m["signal"] for m in page["marks"]] == [0, 1]
            assert [(r["kind"], r["status"], r["decided_by"]) for r in page["recommendations"]] == [
                ("deal_update", "approved", "user_ana"),
                ("follow_up", "pending", None),
            ]
            erased = http.get(f"/calls/{ids['erased']}", headers=mine).json()
            assert erased["transcript"] is None and erased["marks"] == []
            assert http.get("/calls", headers=theirs).json()["calls"] == []
            missing = http.get(f"/calls/{ids['call']}", headers=theirs)
            assert missing.status_code == 404
            assert http.get("/calls", params={"offset": "x"}, headers=mine).status_code == 400

            listed_deals = http.get("/deals", headers=mine)
            assert listed_deals.status_code == 200, listed_deals.text
            stages = {s["stage"]: s for s in listed_deals.json()["stages"]}
            assert list(stages)[:6] == [
                "discovery",
                "demo",
                "proposal",
                "negotiation",
                "closed_won",
                "closed_lost",
            ]
            demo = stages["demo"]
            assert (demo["count"], demo["value"]) == (2, 50000.0)
            assert [d["name"] for d in demo["deals"]] == ["Harbor rollout", "MercyRidge campus"]
            assert stages["closed_won"]["count"] == 1 and stages["discovery"]["deals"] == []
            deal = http.get(f"/deals/{ids['deal']}", headers=mine).json()
            assert deal["deal"]["name"] == "MercyRidge campus"
            assert [c["title"] for c in deal["calls"]] == ["MercyRidge demo"]
            assert sorted(r["kind"] for r in deal["recommendations"]) == [
                "deal_update",
                "follow_up",
            ]
            assert http.get(f"/deals/{ids['deal']}", headers=theirs).status_code == 404
            assert all(s["count"] == 0 for s in http.get("/deals", headers=theirs).json()["stages"])


def test_a_call_in_the_browser(
    testdb: PgDB, gcs: Gcs, tmp_path: Path, browser: webdriver.Chrome
) -> None:
    db = testdb.app()
    ids = seed(db, gcs)
    with overview_stack(testdb, db, tmp_path, ["chat"], env=lambda _: gcs.env) as stack:
        wait = WebDriverWait(browser, 30)
        browser.get(f"{stack.base}/overview#token={mint_local_token(tmp_path, ORG)}")
        row = wait.until(
            lambda d: d.find_element(By.CSS_SELECTOR, f'#calls-body tr[data-id="{ids["call"]}"]')
        )
        row.find_element(By.CSS_SELECTOR, "button").send_keys(Keys.ENTER)
        call = wait.until(
            lambda d: d.find_element(By.CSS_SELECTOR, f'#call[data-id="{ids["call"]}"]')
        )
        assert browser.switch_to.active_element == call.find_element(By.TAG_NAME, "h3")
        marked = call.find_elements(By.CSS_SELECTOR, ".call-transcript mark")
        assert [m.get_attribute("textContent") for m in marked] == [
            "board approved the   new campus budget",
            "We still run <b>spreadsheets</b>",
        ]
        assert marked[1].get_attribute("title") == "pain: Manual inspections"
        assert call.find_elements(By.CSS_SELECTOR, ".call-transcript b") == []  # text, not markup
        text = str(call.get_attribute("textContent"))
        assert "deal update from AGT-006: approved by user_ana" in text
        assert "follow up from AGT-007: pending" in text
        assert serious_violations(browser) == [], "the Calls view"

        # The deal, from the Deals view: its call opens in the Calls view.
        deal_row = browser.find_element(By.CSS_SELECTOR, f'#deals tr[data-id="{ids["deal"]}"]')
        deal_row.find_element(By.CSS_SELECTOR, "button").send_keys(Keys.ENTER)
        deal = wait.until(
            lambda d: d.find_element(By.CSS_SELECTOR, f'#deal[data-id="{ids["deal"]}"]')
        )
        assert browser.switch_to.active_element == deal.find_element(By.TAG_NAME, "h3")
        said = str(deal.get_attribute("textContent"))
        assert "Stagedemo" in said and "follow up from AGT-007: pending" in said
        groups = [
            h.get_attribute("textContent")
            for h in browser.find_elements(By.CSS_SELECTOR, "#deals tr.deal-stage th")
        ]
        assert groups == ["demo: 2 · $50,000", "closed won: 1 · $12,000"]
        assert serious_violations(browser) == [], "the Deals view"
        screenshot(browser, "overview-call", browser.find_element(By.ID, "calls-view"))
