"""AGT-010, the daily brief (seed §5.5): real PostgreSQL, the offline model, and the real
``daily-brief`` function over HTTP (local mode, and production mode without a token)."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from colony.adapters.embedding import OfflineHashEmbedder
from colony.errors import NotFound, ValidationFailed
from colony.flows.insights.brief import MAX_WORDS, daily_brief
from colony.flows.insights.brief_text import SECTIONS, word_count
from colony.knowledge import KnowledgeStore
from colony.llm.agent_call import llm_from_settings
from colony.local.demo import load_demo
from colony.local.functions import FunctionServers
from colony.runtime.deps import Deps
from colony.settings import Settings
from colony.store import fetch_all, fetch_one
from colony.testing.inline import InlineTransport, local_deps
from tests.conftest import APP_ROLE, PgDB

pytestmark = pytest.mark.covers("AGT-010", "ENT-009", "fn:daily-brief")

ORG = "org_zoomprop_demo"
TODAY = date(2026, 11, 30)  # local_deps' clock (FIXED_NOW): 2026-11-30 09:00 UTC
YESTERDAY, BEFORE = "2026-11-29", "2026-11-28"


def make_deps(testdb: PgDB) -> Deps:
    db = testdb.app()
    knowledge = KnowledgeStore(db, OfflineHashEmbedder())
    load_demo(db, knowledge, say=lambda _: None)
    settings = Settings.from_env({})
    return local_deps(settings, db, InlineTransport(), llm_from_settings(settings, db), knowledge)


def at(day: str, hour: int) -> datetime:
    return datetime.fromisoformat(f"{day}T{hour:02d}:00:00+00:00")


def seed_activity(deps: Deps) -> None:
    """Sends, bounces, replies, published content, pending items and a paused campaign,
    spread over yesterday and the days around it (only yesterday's may count)."""
    outbox = [  # (created_at, status)
        (at(YESTERDAY, 0), "delivered"),
        (at(YESTERDAY, 8), "bounced"),
        (at(YESTERDAY, 12), "replied"),
        (at(YESTERDAY, 23), "sent"),
        (at(YESTERDAY, 15), "queued"),
        (at(YESTERDAY, 16), "blocked"),  # never left
        (at(BEFORE, 10), "delivered"),
        (at(BEFORE, 23), "bounced"),  # the day before
        (at("2026-11-30", 0), "replied"),  # today
    ]
    published = [at(YESTERDAY, 9), at(YESTERDAY, 18), at(BEFORE, 9), at("2026-11-30", 1)]
    with deps.db.transaction(ORG) as cur:
        for when, status in outbox:
            item = fetch_one(
                cur,
                "INSERT INTO approval_items (org_id, kind, status, source_agent, payload)"
                " VALUES (%s, 'outbound_message', 'applied', 'AGT-005', '{}') RETURNING id",
                (ORG,),
            )
            cur.execute(
                "INSERT INTO outbox (org_id, approval_item_id, subject, body, status, created_at)"
                " VALUES (%s, %s, 's', 'b', %s, %s)",
                (ORG, item["id"], status, when),
            )
        for when in published:
            item = fetch_one(
                cur,
                "INSERT INTO approval_items (org_id, kind, status, source_agent, payload)"
                " VALUES (%s, 'content_piece', 'applied', 'AGT-008', '{}') RETURNING id",
                (ORG,),
            )
            cur.execute(
                "INSERT INTO published_content (org_id, approval_item_id, title, format, body,"
                " published_at) VALUES (%s, %s, 't', 'linkedin_post', 'b', %s)",
                (ORG, item["id"], when),
            )
        for kind in ("deal_update", "follow_up", "content_piece"):
            cur.execute(
                "INSERT INTO approval_items (org_id, kind, source_agent, payload)"
                " VALUES (%s, %s, 'AGT-006', '{}')",
                (ORG, kind),
            )
        cur.execute(
            "INSERT INTO campaigns (org_id, name, angle, tier, status)"
            " VALUES (%s, 'paused one', 'Signal', 'T1', 'paused'),"
            "        (%s, 'running one', 'Pain', 'T2', 'active')",
            (ORG, ORG),
        )


def independent_numbers(deps: Deps, day: str) -> dict:
    """The brief's numbers, computed here with SQL of the test's own (UTC calendar days)."""
    left = ["sent", "delivered", "bounced", "complained", "replied"]

    def count(cur, sql: str, params: tuple = ()) -> int:
        return int(fetch_one(cur, sql, params)["n"])

    with deps.db.transaction(ORG) as cur:
        cur.execute("SET LOCAL TIME ZONE 'UTC'")
        sent = fetch_all(
            cur,
            "SELECT status FROM outbox WHERE created_at::date = %s::date - 1 AND status = ANY(%s)",
            (day, left),
        )
        stages = fetch_all(
            cur,
            "SELECT DISTINCT stage, (SELECT count(*) FROM deals d2 WHERE d2.stage = d.stage) AS n"
            " FROM deals d",
        )
        return {
            "deals_by_stage": {r["stage"]: r["n"] for r in stages},
            "approval_queue_count": count(
                cur,
                "SELECT count(*) AS n FROM approval_items"
                " WHERE decided_at IS NULL AND status = 'pending'",
            ),
            "messages_sent": len(sent),
            "bounced": sum(r["status"] == "bounced" for r in sent),
            "replied": sum(r["status"] == "replied" for r in sent),
            "content_published": count(
                cur,
                "SELECT count(*) AS n FROM published_content"
                " WHERE published_at::date = %s::date - 1",
                (day,),
            ),
            "paused": count(cur, "SELECT count(*) AS n FROM campaigns WHERE status = 'paused'"),
        }


def test_brief_numbers_match_independent_sql(testdb: PgDB) -> None:
    deps = make_deps(testdb)
    seed_activity(deps)
    expected = independent_numbers(deps, TODAY.isoformat())
    # the seed itself says what yesterday held: 4 sent (1 bounced, 1 replied), 2 published
    assert (expected["messages_sent"], expected["bounced"], expected["replied"]) == (4, 1, 1)
    assert expected["content_published"] == 2 and expected["paused"] == 1

    brief = daily_brief(deps, ORG)
    assert brief["created"] is True and brief["brief_date"] == TODAY.isoformat()
    snap = brief["data_snapshot"]
    assert snap["deals_by_stage"] == expected["deals_by_stage"]
    assert snap["approval_queue_count"] == expected["approval_queue_count"] == 3
    assert snap["messages_sent"] == expected["messages_sent"]
    assert snap["content_published"] == expected["content_published"]
    assert snap["bounce_rate"] == expected["bounced"] / expected["messages_sent"] == 0.25
    assert snap["reply_rate"] == expected["replied"] / expected["messages_sent"]
    assert snap["circuit_breaker"] == "open (1 campaign paused)"

    text = brief["content"]
    open_deals = sum(n for s, n in expected["deals_by_stage"].items() if not s.startswith("closed"))
    assert f"{open_deals} open deals" in text
    assert "4 messages sent, 2 content pieces published, reply rate 25% (0.25)" in text
    assert "bounce rate 25% (0.25)" in text and "3 items awaiting approval" in text
    assert "Circuit breaker is open (1 campaign paused)" in text

    # ≤250 words, the five sections of seed §5.5 in order, one per line
    assert word_count(text) <= MAX_WORDS
    assert [line.split(":", 1)[0] for line in text.splitlines()] == [t for _, t in SECTIONS]
    assert set(brief["sections"]) == {key for key, _ in SECTIONS}
    with deps.db.transaction(ORG) as cur:
        row = fetch_one(
            cur, "SELECT content, data_snapshot FROM daily_briefs WHERE brief_date = %s", (TODAY,)
        )
    assert row == {"content": text, "data_snapshot": snap}


def test_continuity_uses_yesterdays_brief_and_reruns_do_not_duplicate(testdb: PgDB) -> None:
    deps = make_deps(testdb)
    seed_activity(deps)
    first = daily_brief(deps, ORG, date(2026, 11, 29))  # judges the 28th: 1 of 2 bounced
    assert first["data_snapshot"]["bounce_rate"] == 0.5
    assert "Versus the prior brief" not in first["content"]  # nothing before it
    assert "bounce rate 50% (0.5)" in first["content"]

    today = daily_brief(deps, ORG)
    yesterday_line = today["sections"]["yesterday"]
    assert "Versus the prior brief, bounce rate is down from 50%." in yesterday_line

    again = daily_brief(deps, ORG)
    assert again["created"] is False and again["content"] == today["content"]
    with deps.db.transaction(ORG) as cur:
        briefs = fetch_all(cur, "SELECT brief_date FROM daily_briefs ORDER BY brief_date")
        calls = fetch_one(cur, "SELECT count(*) AS n FROM llm_calls WHERE agent_id = 'AGT-010'")
    assert [b["brief_date"] for b in briefs] == [date(2026, 11, 29), TODAY]
    assert calls["n"] == 2  # the rerun read the stored brief; no third model call


def test_an_org_with_no_data_gets_a_clear_brief_and_an_unknown_org_an_error(
    testdb: PgDB,
) -> None:
    deps = make_deps(testdb)
    with deps.db.transaction("org_empty") as cur:
        cur.execute("INSERT INTO organizations (id, name) VALUES ('org_empty', 'Empty Co')")
    brief = daily_brief(deps, "org_empty")
    assert brief["data_snapshot"] == {
        "deals_by_stage": {},
        "approval_queue_count": 0,
        "messages_sent": 0,
        "content_published": 0,
        "circuit_breaker": "closed",
        "bounce_rate": 0.0,
        "reply_rate": 0.0,
        "replies_received": 0,
        "replies_positive": 0,
        "replies_negative": 0,
    }
    text = brief["content"]
    assert "0 open deals; by stage: no deals." in text
    assert "0 items awaiting approval; the queue is clear." in text
    assert "0 messages sent, 0 content pieces published" in text
    with pytest.raises(NotFound, match="org_nobody"):
        daily_brief(deps, "org_nobody")
    with pytest.raises(ValidationFailed, match="after today"):
        daily_brief(deps, "org_empty", TODAY + timedelta(days=1))
    with deps.db.transaction("org_nobody") as cur:
        assert fetch_one(cur, "SELECT count(*) AS n FROM daily_briefs")["n"] == 0


def _function_env(testdb: PgDB, tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "COLONY_DB_MODE": "dsn",
        "COLONY_DB_DSN": testdb.dsn(APP_ROLE),
        "COLONY_TRANSPORT": "local",
        "COLONY_DATA_DIR": str(tmp_path),
        **extra,
    }


def test_the_scheduler_target_over_http(testdb: PgDB, tmp_path: Path) -> None:
    deps = make_deps(testdb)
    env = _function_env(testdb, tmp_path)
    with (
        FunctionServers(env, ["daily-brief"], log_dir=tmp_path) as servers,
        httpx.Client(timeout=60) as http,
    ):
        url = servers.urls["daily-brief"]
        body = {"org_id": ORG, "brief_date": TODAY.isoformat()}
        first = http.post(url, json=body)
        assert first.status_code == 200, first.text
        assert first.json()["created"] is True
        second = http.post(url, json=body)
        assert second.json()["created"] is False
        assert second.json()["content"] == first.json()["content"]
        missing = http.post(url, json={"org_id": "org_nobody"})
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
        bad = http.post(url, json={"org": ORG})
        assert bad.status_code == 400 and bad.json()["error"]["code"] == "validation_failed"
        # a day that has not happened would store today's numbers under it, for good
        future = http.post(url, json={"org_id": ORG, "brief_date": "2999-01-01"})
        assert future.status_code == 400, future.text
        assert future.json()["error"]["code"] == "validation_failed"
        assert "after today" in future.json()["error"]["message"]
    with deps.db.transaction(ORG) as cur:
        assert fetch_one(cur, "SELECT count(*) AS n FROM daily_briefs")["n"] == 1


def test_production_scheduler_call_without_a_valid_oidc_token_is_401(
    testdb: PgDB, tmp_path: Path
) -> None:
    deps = make_deps(testdb)
    env = _function_env(
        testdb,
        tmp_path,
        COLONY_ENV="production",
        COLONY_INVOKER_SERVICE_ACCOUNT="scheduler@colony-prod.iam.gserviceaccount.com",
    )
    with FunctionServers(env, ["daily-brief"], log_dir=tmp_path) as servers:
        url = servers.urls["daily-brief"]
        for headers in (
            {},
            {"Authorization": "Basic c2NoZWR1bGVyOng="},
            {"Authorization": "Bearer"},
        ):
            reply = httpx.post(url, json={"org_id": ORG}, headers=headers, timeout=60)
            assert reply.status_code == 401, reply.text
            assert reply.headers["content-type"] == "application/json"
            assert reply.json()["error"]["code"] == "unauthorized"
            assert reply.headers["WWW-Authenticate"] == "Bearer"
    with deps.db.transaction(ORG) as cur:
        assert fetch_one(cur, "SELECT count(*) AS n FROM daily_briefs")["n"] == 0
