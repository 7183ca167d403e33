"""Prospects as records (issue 34 item 1) over real HTTP: the chat function served by
functions-framework, the embedded PostgreSQL, local bearer tokens, two tenants.

The list filters on the server (tier, score band, sequence status, campaign, signal type,
replied, text) and pages; a prospect's page carries its ICP score with AGT-004's reasons, its
signals with quotes and sources, its sequence and next step, each message with its replies
under it, and the decisions on it. Another org sees none of it; bad filters are named.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from colony.local.functions import FunctionServers
from colony.local.tokens import mint_local_token
from colony.store import Database
from colony.store.campaigns import campaigns
from tests.conftest import APP_ROLE, PgDB

pytestmark = pytest.mark.covers("fn:chat", "ENT-002", "ENT-012")

ORG, OTHER = "org_records", "org_records_other"


def seed(db: Database) -> dict[str, str]:
    """Dana (T1, 91, in a Signal sequence at step 2, replied positively to step 1, a hiring
    signal, her draft approved by a person), Omar (T3, 55, no sequence) and 60 others (T4,
    scores 10..69) to page through; one prospect of another org."""
    ids: dict[str, str] = {}
    for org in (ORG, OTHER):
        with db.transaction(org) as cur:
            cur.execute("INSERT INTO organizations (id, name) VALUES (%s, %s)", (org, org))
    with db.transaction(OTHER) as cur:
        cur.execute(
            "INSERT INTO contacts (org_id, name, company, icp_score, icp_tier)"
            " VALUES (%s, 'Dana Elsewhere', 'Other Co', 99, 'T1')",
            (OTHER,),
        )
    with db.transaction(ORG) as cur:

        def contact(name: str, company: str, score: int, tier: str) -> str:
            cur.execute(
                "INSERT INTO contacts (org_id, name, title, email, company, icp_score, icp_tier,"
                " icp_recommendation) VALUES (%s, %s, 'VP Facilities', %s, %s, %s, %s, 'qualify')"
                " RETURNING id",
                (
                    ORG,
                    name,
                    f"{name.split()[0].lower()}@{company.lower()}.example",
                    company,
                    score,
                    tier,
                ),
            )
            return str(cur.fetchone()[0])

        ids["dana"] = contact("Dana Whitfield", "MercyRidge", 91, "T1")
        ids["omar"] = contact("Omar Haddad", "Lakeshore", 55, "T3")
        for n in range(60):
            contact(f"Person {n:02d}", f"Co{n:02d}", 10 + n, "T4")
        ids["campaign"] = campaigns.create(
            cur,
            ORG,
            name="Spring <b>Signal</b>",
            angle="Signal",
            tier="T1",
            bounce_threshold=0.05,
            complaint_threshold=0.003,
        )
        dana, campaign = ids["dana"], ids["campaign"]
        cur.execute(
            "INSERT INTO campaign_contacts (org_id, campaign_id, contact_id) VALUES (%s, %s, %s)",
            (ORG, campaign, dana),
        )
        cur.execute(
            "INSERT INTO sequence_enrollments (org_id, campaign_id, contact_id, run_id, angle,"
            " tier, steps, step, status, next_due_at) VALUES (%s, %s, %s, 'run-1', 'Signal',"
            " 'T1', 3, 2, 'active', '2026-12-10T09:00:00Z')",
            (ORG, campaign, dana),
        )
        cur.execute(
            "INSERT INTO contact_signals (org_id, contact_id, signal_key, type, detail, quote,"
            " source, confidence, observed_on) VALUES (%s, %s, 'k1', 'hiring', 'Hiring a'"
            " || ' facilities director', 'We are hiring a Director of Facilities <script>',"
            " 'https://mercyridge.example/careers', 0.9, '2026-11-20')",
            (ORG, dana),
        )
        cur.execute(
            "INSERT INTO run_steps (org_id, run_id, step_key, output) VALUES (%s, 'run-1', %s,"
            " %s::jsonb)",
            (
                ORG,
                f"qualify:{dana}",
                json.dumps(
                    {
                        "total_score": 91,
                        "reasoning": "Expanding campus and hiring facilities leadership.",
                        "dimension_scores": {"firmographics": 95, "signals": 90},
                        "tier_rule": "score 85+ is T1",
                    }
                ),
            ),
        )
        cur.execute(
            "INSERT INTO approval_items (org_id, kind, status, source_agent, subject_id, payload,"
            " decided_by, decided_at) VALUES (%s, 'outbound_message', 'approved', 'AGT-005', %s,"
            " '{}'::jsonb, 'user_ana', now()) RETURNING id",
            (ORG, dana),
        )
        item = cur.fetchone()[0]
        cur.execute(
            "INSERT INTO audit_log (org_id, event, approval_item_id, item_kind, actor, channel,"
            " action) VALUES (%s, 'decision', %s, 'outbound_message', 'user_ana', 'ui', 'approve')",
            (ORG, item),
        )
        cur.execute(
            "INSERT INTO outbox (org_id, approval_item_id, campaign_id, contact_id, subject, body,"
            " status, sequence_step, sent_at) VALUES (%s, %s, %s, %s, 'Your new campus',"
            " 'Hi Dana, congratulations on the expansion.', 'replied', 1, now()) RETURNING id",
            (ORG, item, campaign, dana),
        )
        outbox = cur.fetchone()[0]
        cur.execute(
            "INSERT INTO replies (org_id, outbox_id, contact_id, message_id, body, sentiment)"
            " VALUES (%s, %s, %s, '<r1@mercyridge.example>', 'Sounds good, <b>call me</b>.',"
            " 'positive')",
            (ORG, outbox, dana),
        )
    return ids


@pytest.fixture
def records(testdb: PgDB, tmp_path: Path) -> Iterator[tuple[httpx.Client, str, dict[str, str]]]:
    db = testdb.app()
    ids = seed(db)
    env = {
        "COLONY_DB_MODE": "dsn",
        "COLONY_DB_DSN": testdb.dsn(APP_ROLE),
        "COLONY_TRANSPORT": "local",
        "COLONY_DATA_DIR": str(tmp_path),
    }
    ids["token"] = mint_local_token(tmp_path, ORG)
    ids["other_token"] = mint_local_token(tmp_path, OTHER)
    with (
        FunctionServers(env, ["chat"], log_dir=tmp_path) as servers,
        httpx.Client(timeout=30, headers={"Authorization": f"Bearer {ids['token']}"}) as http,
    ):
        yield http, servers.urls["chat"], ids


def names(body: dict[str, Any]) -> list[str]:
    return [p["name"] for p in body["prospects"]]


def test_the_list_filters_and_pages_on_the_server(
    records: tuple[httpx.Client, str, dict[str, str]],
) -> None:
    http, base, ids = records
    first = http.get(f"{base}/prospects").json()
    assert first["total"] == 62 and len(first["prospects"]) == 50 and first["next_offset"] == 50
    assert names(first)[:2] == ["Dana Whitfield", "Person 59"]  # best score first
    rest = http.get(f"{base}/prospects", params={"offset": 50}).json()
    assert len(rest["prospects"]) == 12 and rest["next_offset"] is None
    assert not set(names(first)) & set(names(rest))

    def only(**params: Any) -> list[str]:
        answer = http.get(f"{base}/prospects", params=params)
        assert answer.status_code == 200, answer.text
        return names(answer.json())

    assert only(tier="T3") == ["Omar Haddad"]
    assert only(min_score=50, max_score=56, tier="T4") == [
        "Person 46",
        "Person 45",
        "Person 44",
        "Person 43",
        "Person 42",
        "Person 41",
        "Person 40",
    ]
    assert only(status="active") == ["Dana Whitfield"]
    assert "Dana Whitfield" not in only(status="none") and "Omar Haddad" in only(status="none")
    assert only(campaign=ids["campaign"]) == ["Dana Whitfield"]
    assert only(signal="hiring") == ["Dana Whitfield"] and only(signal="funding") == []
    assert only(replied="yes") == ["Dana Whitfield"]
    assert "Dana Whitfield" not in only(replied="no")
    assert only(q="lakeshore") == ["Omar Haddad"] and only(q="DANA@") == ["Dana Whitfield"]
    dana = next(p for p in first["prospects"] if p["id"] == ids["dana"])
    assert dana["campaigns"] == [{"id": ids["campaign"], "name": "Spring <b>Signal</b>"}]
    assert (dana["sequence_status"], dana["replied"], dana["signal_types"]) == (
        "active",
        True,
        ["hiring"],
    )

    for params, says in (
        ({"tier": "T9"}, "tier must be one of"),
        ({"min_score": "101"}, "min_score must be a whole number from 0 to 100"),
        ({"min_score": "60", "max_score": "40"}, "min_score must not be above max_score"),
        ({"status": "paused"}, "status must be one of"),
        ({"replied": "maybe"}, "replied must be yes or no"),
        ({"offset": "-5"}, "offset must be a whole number"),
        ({"q": "x" * 201}, "q is at most 200 characters"),
    ):
        refused = http.get(f"{base}/prospects", params=params)
        assert refused.status_code == 400 and says in refused.json()["error"]["message"], params
    assert http.post(f"{base}/prospects", json={}).status_code == 405


def test_a_prospect_page_tells_the_whole_story(
    records: tuple[httpx.Client, str, dict[str, str]],
) -> None:
    http, base, ids = records
    page = http.get(f"{base}/prospects/{ids['dana']}")
    assert page.status_code == 200, page.text
    body = page.json()
    p = body["prospect"]
    assert (p["name"], p["company"], p["email"]) == (
        "Dana Whitfield",
        "MercyRidge",
        "dana@mercyridge.example",
    )
    assert p["icp"]["score"] == 91 and p["icp"]["tier"] == "T1"
    assert p["icp"]["reasoning"] == "Expanding campus and hiring facilities leadership."
    assert p["icp"]["dimension_scores"] == {"firmographics": 95, "signals": 90}
    assert p["icp"]["tier_rule"] == "score 85+ is T1" and p["icp"]["scored_at"]
    [signal] = body["signals"]
    assert signal["quote"] == "We are hiring a Director of Facilities <script>"
    assert (signal["source"], signal["observed_on"]) == (
        "https://mercyridge.example/careers",
        "2026-11-20",
    )
    [sequence] = body["sequences"]
    assert sequence["campaign"] == "Spring <b>Signal</b>"
    assert (sequence["status"], sequence["next_step"], sequence["steps"]) == ("active", 2, 3)
    assert sequence["next_due_at"].startswith("2026-12-10T09:00:00")
    [message] = body["messages"]
    assert (message["sequence_step"], message["subject"], message["status"]) == (
        1,
        "Your new campus",
        "replied",
    )
    assert [(r["body"], r["sentiment"]) for r in message["replies"]] == [
        ("Sounds good, <b>call me</b>.", "positive")
    ]
    assert [(t["actor"], t["action"]) for t in body["trail"]] == [("user_ana", "approve")]

    omar = http.get(f"{base}/prospects/{ids['omar']}").json()
    assert omar["signals"] == omar["sequences"] == omar["messages"] == omar["trail"] == []
    assert omar["prospect"]["icp"]["reasoning"] is None


def test_another_org_sees_none_of_it(records: tuple[httpx.Client, str, dict[str, str]]) -> None:
    http, base, ids = records
    theirs = {"Authorization": f"Bearer {ids['other_token']}"}
    listed = http.get(f"{base}/prospects", headers=theirs).json()
    assert names(listed) == ["Dana Elsewhere"] and listed["total"] == 1
    assert (
        http.get(f"{base}/prospects", headers=theirs, params={"campaign": ids["campaign"]}).json()[
            "total"
        ]
        == 0
    )
    missing = http.get(f"{base}/prospects/{ids['dana']}", headers=theirs)
    assert missing.status_code == 404 and "no prospect" in missing.json()["error"]["message"]
    assert (
        http.get(f"{base}/prospects", headers={"Authorization": "Bearer nope"}).status_code == 401
    )
