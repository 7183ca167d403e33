"""Research in the campaign chain (issue 33 items 1 and 5): a prospect imported with nothing
but a name, a title and its company's domain waits for its company's research, then AGT-003
reads the stored pages and keeps signals that quote them (each naming the page's URL and
date) and the firmographics they state, so AGT-004 can score it and AGT-005 drafts for it.
Real embedded PostgreSQL, the GCS emulator, the stand-in web over HTTP, the real fetcher
and the offline model (which reads only the prompt it is sent)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from colony.adapters.embedding import OfflineHashEmbedder
from colony.flows.approvals import approval_queue
from colony.flows.campaigns import campaign
from colony.flows.insights import explain
from colony.knowledge import KnowledgeStore
from colony.llm.agent_call import llm_from_settings
from colony.local.demo import load_demo
from colony.policy.grounding import verbatim
from colony.settings import Settings
from colony.store import fetch_all, fetch_one
from colony.testing.inline import run_until_idle
from colony.testing.web_server import WebServer
from tests.conftest import Gcs, PgDB
from tests.research_world import drain, research_deps

ORG = "org_zoomprop_demo"
LAKESHORE = "lakeshorehealth.test"
ABOUT = (
    "Lakeshore Health is a health system with about 2,400 employees across 14 facilities in"
    " Wisconsin. Our clinicians chart in Epic."
)
NEWS = [
    (
        "2026-11-10",
        "Lakeshore Health opens a new ambulatory surgery center",
        "Lakeshore Health opened a new ambulatory surgery center in Madison this month.",
    ),
    ("2023-02-01", "Lakeshore Health marks a milestone", "A celebration of an older era."),
]


@pytest.fixture
def web() -> Iterator[WebServer]:
    with WebServer(seed=3) as server:
        server.add_company(
            LAKESHORE,
            "Lakeshore Health",
            about=ABOUT,
            news=NEWS,
            jobs=[("Director of Real Estate", "2026-11-18")],
            job_board="lever",
        )
        yield server


def world(testdb: PgDB, gcs: Gcs, web: WebServer):
    """The demo org with its Knowledge Core, the offline model, the real fetcher."""
    db = testdb.app()
    knowledge = KnowledgeStore(db, OfflineHashEmbedder())
    load_demo(db, knowledge, say=lambda _: None)
    llm = llm_from_settings(Settings.from_env({}), db)
    return research_deps(db, web, gcs.store, llm=llm, knowledge=knowledge)


def bare_contact(deps, domain: str) -> str:
    """A prospect as a CRM export gives it; the demo org (researched by hand) opts in."""
    with deps.db.transaction(ORG) as cur:
        cur.execute("UPDATE org_settings SET research_enabled = true")
        row = fetch_one(
            cur,
            "INSERT INTO contacts (org_id, external_id, name, title, email, company,"
            " company_domain) VALUES (%s, 'CRM-9', 'Jamie Rivera', 'VP Facilities',"
            " 'jamie.rivera@lakeshorehealth.test', 'Lakeshore Health', %s) RETURNING id",
            (ORG, domain),
        )
    assert row is not None
    return str(row["id"])


def test_an_imported_prospect_gets_a_draft_whose_signals_quote_stored_pages(
    testdb: PgDB, gcs: Gcs, web: WebServer
) -> None:
    deps, transport = world(testdb, gcs, web)
    contact = bare_contact(deps, LAKESHORE)
    campaign_id = campaign.create_campaign(
        deps, ORG, name="Research", angle="Signal", tier="T1", contact_ids=[contact]
    )
    run_id = campaign.launch(deps, ORG, campaign_id)
    run_until_idle(deps, transport)
    with deps.db.transaction(ORG) as cur:  # waiting for research: no AGT-003 call yet
        assert fetch_all(cur, "SELECT 1 FROM llm_calls") == []
        job = fetch_one(cur, "SELECT status, waiters FROM research_jobs")
    assert job is not None and job["status"] == "running" and len(job["waiters"]) == 1
    assert drain(deps, transport)[-1]["released"] == 1
    stats = run_until_idle(deps, transport)
    assert not stats.rejected and not stats.dead_letters, stats

    with deps.db.transaction(ORG) as cur:
        contact_row = fetch_one(
            cur, "SELECT enrichment, icp_score FROM contacts WHERE id = %s", (contact,)
        )
        kept = fetch_all(cur, "SELECT * FROM contact_signals WHERE contact_id = %s", (contact,))
        pages = {s["final_url"]: s for s in fetch_all(cur, "SELECT * FROM research_sources")}
        drafts = fetch_all(
            cur,
            "SELECT payload FROM approval_items WHERE subject_id = %s AND run_id = %s",
            (contact, run_id),
        )
    assert contact_row is not None
    enrichment = contact_row["enrichment"]
    assert enrichment["employee_count"] == 2400 and enrichment["vertical"] == "health_system"
    assert enrichment["research"]["outcome"] == "researched"
    assert kept, "AGT-003 kept no signal from the stored pages"
    for signal in kept:  # each quotes the stored text of the page it names, word for word
        page = pages[signal["source"]]
        text = gcs.store.get(page["text_object"]).decode()
        assert verbatim([signal], text)[0], signal
        if page["published_at"] is not None:  # the passage's own date (a post's), never later
            assert signal["observed_on"] is not None
            assert signal["observed_on"] <= page["published_at"]
    types = {s["type"] for s in kept}
    assert "expansion" in types and "hiring" in types
    newest = max(kept, key=lambda s: s["observed_on"] or s["created_at"].date())
    assert newest["observed_on"] is None or newest["observed_on"].year == 2026
    assert contact_row["icp_score"] is not None and contact_row["icp_score"] >= 65
    assert drafts, "no draft reached the approval queue"

    # the card: each web signal links our stored copy (signed) and says when it was fetched
    cards = approval_queue.pending_cards(deps, ORG, detail=True)["items"]
    card = next(c for c in cards if c["detail"].get("prospect", {}).get("name") == "Jamie Rivera")
    assert card["detail"]["research"]["outcome"] == "researched"
    web_signals = [s for s in card["detail"]["signals"] if s["source"].startswith("http")]
    assert web_signals
    for signal in web_signals:
        link = signal["stored_copy"]["url"]
        assert signal["fetched_on"] and "X-Goog-Signature=" in link
        page = pages[signal["source"]]
        assert page["text_object"] in link.split("?")[0]
    # explain: the draft's call names the signals it was given, each with its stored copy
    explained = explain.explain(deps, ORG, card["id"])
    given = [s for c in explained["calls"] for s in c["signals"] if s["source"] in pages]
    assert given and all("X-Goog-Signature=" in s["stored_copy"]["url"] for s in given)
    assert "stored copy: http" in explain.render(explained)


def test_a_company_with_no_website_goes_on_and_says_so(
    testdb: PgDB, gcs: Gcs, web: WebServer
) -> None:
    deps, transport = world(testdb, gcs, web)
    contact = bare_contact(deps, "no-website.example")
    campaign_id = campaign.create_campaign(
        deps, ORG, name="Research", angle="Signal", tier="T1", contact_ids=[contact]
    )
    campaign.launch(deps, ORG, campaign_id)
    run_until_idle(deps, transport)
    assert drain(deps, transport)[-1]["outcome"] == "no_website"
    run_until_idle(deps, transport)
    with deps.db.transaction(ORG) as cur:
        row = fetch_one(cur, "SELECT enrichment FROM contacts WHERE id = %s", (contact,))
        done = fetch_all(
            cur, "SELECT step_key FROM run_steps WHERE step_key = %s", (f"done:{contact}",)
        )
    assert row is not None and row["enrichment"]["research"]["outcome"] == "no_website"
    assert done, "the contact's chain did not finish"
