"""A sequence's LinkedIn step on /overview (issue 39 item 1), in a real headless Chromium
against the real chat and campaign-resume functions and the embedded PostgreSQL.

The campaign runs in-process with the offline model (its step 1 is a LinkedIn step, so
AGT-005 drafts a task, not an email); the person opens the queue, sees the task with its
talking points and the step's guidance, and marks it done from the card. The decision and
what it did are checked in ``approval_items``, ``audit_log`` and the enrollment: the sequence
moved on, the campaign's funnel counts the task as drafted and done, and nothing went to the
outbox. The screenshot is ``artifacts/overview-task.png``.
"""

from __future__ import annotations

from pathlib import Path

from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from colony.adapters.embedding import OfflineHashEmbedder
from colony.contracts.admin import SequenceLibrary
from colony.flows.campaigns import campaign
from colony.flows.tenants import org_admin
from colony.knowledge import KnowledgeStore
from colony.llm.agent_call import llm_from_settings
from colony.settings import Settings
from colony.store import fetch_all, fetch_one
from colony.store.insights import funnels
from colony.testing.inline import InlineTransport, local_deps, run_until_idle
from tests.axe import serious_violations
from tests.conftest import PgDB
from tests.overview_stack import ORG, demo_db, overview_stack, screenshot

NOTE = "Connect with a short note about the signal, no pitch."


def test_a_linkedin_step_is_a_task_a_person_marks_done_on_overview(
    testdb: PgDB, tmp_path: Path, browser: webdriver.Chrome
) -> None:
    db = demo_db(testdb)
    settings = Settings.from_env({})
    knowledge = KnowledgeStore(db, OfflineHashEmbedder())
    llm = llm_from_settings(settings, db)  # the offline model: no key here
    deps = local_deps(settings, db, InlineTransport(), llm, knowledge)
    steps = [
        {"channel": "linkedin", "delay_days": 0, "guidance": NOTE},
        {"channel": "email", "delay_days": 2, "guidance": "Open on the signal."},
    ]
    library = {"sequences": [{"name": "LinkedIn first", "angle": "Signal", "tier": "T1"}]}
    library["sequences"][0]["steps"] = steps
    org_admin.replace_sequences(deps, ORG, SequenceLibrary.model_validate(library))
    with db.transaction(ORG) as cur:
        contact = fetch_one(cur, "SELECT id, name FROM contacts WHERE external_id = 'P-001'")
    assert contact is not None
    campaign_id = campaign.create_campaign(
        deps, ORG, name="LinkedIn first", angle="Signal", tier="T1", contact_ids=[contact["id"]]
    )
    campaign.launch(deps, ORG, campaign_id)
    idle = run_until_idle(deps, deps.transport)
    assert not idle.rejected and not idle.dead_letters
    with db.transaction(ORG) as cur:
        (task,) = fetch_all(cur, "SELECT id, kind, payload FROM approval_items")
    assert task["kind"] == "sequence_task" and task["payload"]["channel"] == "linkedin"

    with overview_stack(testdb, db, tmp_path, ["chat", "campaign-resume"]) as stack:
        wait = WebDriverWait(browser, 30)
        browser.get(f"{stack.base}/overview#token={stack.token}")
        browser.refresh()
        wait.until(
            lambda d: d.find_element(By.ID, "queue").get_attribute("data-complete") == "true"
        )
        card = browser.find_element(By.CSS_SELECTOR, f'#queue .qcard[data-id="{task["id"]}"]')
        text = str(card.get_attribute("textContent"))
        for shown in ("Task for you", "LinkedIn", "Note to send", NOTE, contact["name"]):
            assert shown in text, shown
        assert task["payload"]["body"] in text
        assert "Nothing is sent for this step" in text
        buttons = [b.text for b in card.find_elements(By.CSS_SELECTOR, ".qactions button")]
        assert buttons == ["Done", "Skip"]  # not editable, nothing to approve
        assert serious_violations(browser) == [], "a task card"
        screenshot(browser, "overview-task", of=card)
        card.find_element(By.CSS_SELECTOR, "[data-action=approve]").click()
        wait.until(
            lambda d: not d.find_elements(By.CSS_SELECTOR, f'.qcard[data-id="{task["id"]}"]')
        )
        assert browser.find_element(By.ID, "status").text.startswith("Done: ")

    with db.transaction(ORG) as cur:
        decided = fetch_one(
            cur, "SELECT status, decided_by FROM approval_items WHERE id = %s", (task["id"],)
        )
        trail = fetch_all(
            cur,
            "SELECT event, channel, action FROM audit_log WHERE approval_item_id = %s ORDER BY id",
            (task["id"],),
        )
        enrollment = fetch_one(
            cur, "SELECT step, status, next_due_at FROM sequence_enrollments", ()
        )
        sent = fetch_all(cur, "SELECT id FROM outbox")
        (funnel,) = [f for f in funnels.recent(cur, 8) if f["id"] == campaign_id]
    assert decided == {"status": "applied", "decided_by": "local-user"}
    assert [(t["event"], t["channel"], t["action"]) for t in trail] == [
        ("decision", "ui", "approve"),
        ("effect", "ui", "task_done"),
        ("effect", "ui", "sequence_advanced"),
    ]
    assert enrollment["status"] == "active" and enrollment["next_due_at"] is not None
    assert sent == []  # nothing is emailed for a LinkedIn step
    # the campaign's funnel counts the task as the contact's drafted step, done by a person
    assert [funnel[k] for k in ("drafted", "approved", "sent")] == [1, 1, 0]
