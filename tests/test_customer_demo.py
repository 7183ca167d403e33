"""``make run``'s new-customer scene against real local servers: every function served by
functions-framework, the GCS emulator, the Notion stand-in, the embedded PostgreSQL. Harbor
Dental Group is created by a Svix-signed Clerk event, imports its CRM export (three bad rows
reported with their row numbers), is backfilled from its own Notion workspace and runs a
campaign; what the scene prints is what the database holds, the demo org sees none of it,
and a second run (Svix redelivering, the same file re-imported) duplicates nothing."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from colony.local.brief_demo import local_storage
from colony.local.campaign_demo import demo_functions
from colony.local.customer_demo import HARBOR, NewCustomer, run_new_customer_demo
from colony.local.demo_context import DemoContext
from colony.local.knowledge_demo import knowledge_stand_ins
from colony.local.research_demo import research_web
from colony.local.secrets import local_secrets
from colony.store import fetch_all
from tests.conftest import APP_ROLE, PgDB
from tests.demo_org import loaded_demo

HARBOR_ID = HARBOR["org"]["id"]
PAGES = {p["id"] for p in HARBOR["notion"]["pages"]}


def test_a_new_customer_signs_up_imports_is_backfilled_and_runs_a_campaign(
    testdb: PgDB, tmp_path: Path, no_ambient_config: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded = loaded_demo(testdb, tmp_path)
    settings, db, knowledge, demo_org = loaded.settings, loaded.db, loaded.knowledge, loaded.org_id
    said: list[str] = []
    with (
        local_storage(settings, said.append),
        knowledge_stand_ins(settings, demo_org) as stand_ins,
        research_web(said.append) as web,
        demo_functions(
            settings, demo_org, testdb.dsn(APP_ROLE), said.append, extra_env={**stand_ins, **web}
        ) as (servers, token),
    ):
        demo = DemoContext(settings, db, knowledge, demo_org, servers, token, said.append)
        start = len(said)
        first = run_new_customer_demo(demo, timeout=180)
        printed = said[start:]
        second = run_new_customer_demo(demo, timeout=120)

    def rows(org: str, sql: str, params: tuple[str, ...] = ()) -> list[dict]:
        with db.transaction(org) as cur:
            return fetch_all(cur, sql, params)

    # the Clerk event made the org; its admin replaced the default ICP and set its library
    assert first.clerk["status"] == "applied" and first.clerk["org_id"] == HARBOR_ID
    assert rows(HARBOR_ID, "SELECT name FROM organizations") == [{"name": "Harbor Dental Group"}]
    icp = rows(HARBOR_ID, "SELECT version, description FROM icp_definitions WHERE active")
    assert icp == [{"version": 3, "description": HARBOR["icp"]["description"]}]  # two runs
    assert [r["step"] for r in rows(HARBOR_ID, "SELECT step FROM sequences ORDER BY step")] == [
        1,
        2,
        3,
    ]

    # 12 records, 3 rejected with their row numbers, the 9 others stored
    job = first.import_job
    assert (job["rows_total"], job["rows_created"], job["rows_rejected"]) == (12, 9, 3)
    assert [(e["row"], e["field"]) for e in first.errors] == [
        ("4", "email"),
        ("7", "company"),
        ("10", "email"),
    ]
    assert first.errors[2]["value"].startswith("'=HYPERLINK(")  # text, never a formula
    contacts = rows(HARBOR_ID, "SELECT external_id FROM contacts ORDER BY external_id")
    assert [c["external_id"] for c in contacts] == [
        f"HB-{n:03d}" for n in (1, 2, 3, 5, 6, 8, 9, 11, 12)
    ]

    # the backfill embedded the org's two pages, in its own Knowledge Core
    assert first.backfill["status"] == "done" and first.backfill["pages_synced"] == 2
    harbor_chunks = rows(HARBOR_ID, "SELECT source_id FROM kc_chunks WHERE source = 'notion'")
    assert {c["source_id"] for c in harbor_chunks} == PAGES
    assert first.chunks == len(harbor_chunks)

    # the campaign ran over the 9 imported prospects to completion, each company researched
    # first (names and titles alone score nothing): drafts follow, each quoting a stored page
    assert first.run["status"] == "completed" and first.run["contacts_done"] == 9
    [run] = rows(HARBOR_ID, "SELECT status, contacts_total FROM campaign_runs")[:1]
    assert run == {"status": "completed", "contacts_total": 9}
    drafts = rows(HARBOR_ID, "SELECT id FROM approval_items WHERE run_id = %s", (first.run["id"],))
    assert first.drafts == len(drafts) and first.drafts >= 5
    jobs = rows(HARBOR_ID, "SELECT domain, outcome FROM research_jobs")
    assert jobs and {j["outcome"] for j in jobs} == {"researched"}
    quoted = rows(
        HARBOR_ID,
        "SELECT s.quote, s.source FROM contact_signals s JOIN approval_items a"
        " ON a.subject_id = s.contact_id WHERE a.run_id = %s AND s.source LIKE 'http%%'",
        (first.run["id"],),
    )
    stored = {r["final_url"] for r in rows(HARBOR_ID, "SELECT final_url FROM research_sources")}
    assert quoted and {q["source"] for q in quoted} <= stored  # every one names a stored page

    # what was printed is that state
    text = "\n".join(printed)
    assert "12 rows, 9 created, 0 updated, 3 rejected" in text
    assert "row 4 (line 5) email" in text and "row 7 (line 8) company" in text
    assert "9/9 contacts (" in text and f"{first.drafts} drafts awaiting approval" in text
    assert f"research (before AGT-003): {len(jobs)} companies" in text and "signal: “" in text
    assert f"{HARBOR_ID} holds 9 contacts, {demo_org} sees 0 of them" in text
    assert "ICP → 403" in text
    assert 15 <= len(printed) <= 30, printed

    # neither org sees the other's rows
    demo_sees = rows(demo_org, "SELECT DISTINCT org_id FROM contacts")
    assert demo_sees == [{"org_id": demo_org}]
    demo_chunks = rows(demo_org, "SELECT source_id FROM kc_chunks WHERE source = 'notion'")
    assert not PAGES & {c["source_id"] for c in demo_chunks}
    assert rows(HARBOR_ID, "SELECT DISTINCT org_id FROM contacts") == [{"org_id": HARBOR_ID}]

    # a second run: Clerk redelivers (a no-op), the same file updates instead of duplicating
    _assert_rerun(second, rows(HARBOR_ID, "SELECT count(*) AS n FROM contacts"))


def _assert_rerun(second: NewCustomer, count: list[dict]) -> None:
    assert second.clerk["status"] == "duplicate"
    job = second.import_job
    assert (job["rows_created"], job["rows_updated"], job["rows_rejected"]) == (0, 9, 3)
    assert count == [{"n": 9}]
    assert second.backfill["status"] == "done"
    assert second.run["status"] == "completed"
    assert second.drafts >= 5  # researched within the freshness window: nothing fetched again


def test_a_secrets_file_from_before_gains_the_clerk_secret_and_keeps_the_rest(
    tmp_path: Path,
) -> None:
    old = {"COLONY_APPROVAL_TOKEN_KEY": "kept", "COLONY_DELIVERY_WEBHOOK_SECRET": "whsec_a2VwdA=="}
    (tmp_path / "secrets.json").write_text(json.dumps(old))
    values = local_secrets(tmp_path)
    assert {k: values[k] for k in old} == old  # approval links already sent stay valid
    assert values["COLONY_CLERK_WEBHOOK_SECRET"].startswith("whsec_")
    assert local_secrets(tmp_path) == values  # generated once
    assert stat.S_IMODE((tmp_path / "secrets.json").stat().st_mode) == 0o600
