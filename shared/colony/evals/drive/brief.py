"""AGT-010, driven as ``flows.insights.brief`` drives it, over numbers SQL computes.

A case's ``rows`` (deals, pending approval kinds, outbox messages, published content,
campaigns, replies; each dated ``yesterday``, ``before`` or ``today`` relative to the brief's
day, at an hour UTC) are written under an org of their own (one per case and run), then the
flow's ``snapshot`` and ``recent_replies`` read them with its own SQL: the numbers the brief
must state are what those aggregates return, never what the case file says. The request is
the one ``brief._generate`` builds (yesterday's brief as assistant history, the snapshot and
the replies as entities, the date as the task) with its word check.

The rows are written with SQL here: local-only tooling setting up data (as ``colony.testing``
and the demo do), never a path a deployed function takes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from colony.context.assembler import AssemblyRequest
from colony.contracts.outputs import DailyBrief
from colony.evals.cases import TODAY, Case
from colony.evals.drive.base import Env, Outcome, call, exemplars, org_context
from colony.flows.insights import brief
from colony.ports import Message
from colony.store import fetch_one
from colony.store.tenants import orgs

ITEM = """
INSERT INTO approval_items (org_id, kind, status, source_agent, payload)
VALUES (%s, %s, %s, %s, '{}') RETURNING id
"""
DEAL = "INSERT INTO deals (org_id, name, stage, value) VALUES (%s, %s, %s, %s)"
OUTBOX = """
INSERT INTO outbox (org_id, approval_item_id, contact_id, subject, body, status, created_at)
VALUES (%s, %s, %s, %s, 'b', %s, %s) RETURNING id
"""
PUBLISHED = """
INSERT INTO published_content (org_id, approval_item_id, title, format, body, published_at)
VALUES (%s, %s, 't', 'linkedin_post', 'b', %s)
"""
CAMPAIGN = (
    "INSERT INTO campaigns (org_id, name, angle, tier, status) VALUES (%s, %s, 'Signal', 'T1', %s)"
)
CONTACT = "INSERT INTO contacts (org_id, name, company) VALUES (%s, %s, 'Eval Co') RETURNING id"
REPLY = """
INSERT INTO replies (org_id, outbox_id, contact_id, message_id, body, sentiment, received_at)
VALUES (%s, %s, %s, %s, %s, %s, %s)
"""
DAYS = {"today": 0, "yesterday": 1, "before": 2}
KC = ("KC-01/positioning-and-messaging.md",)


def at(day: date, row: Mapping[str, Any]) -> datetime:
    when = datetime.combine(day, time(int(row.get("hour") or 0)), tzinfo=UTC)
    return when - timedelta(days=DAYS[str(row.get("day") or "yesterday")])


def org_of(case: Case, env: Env) -> str:
    digest = hashlib.sha256(f"{env.run_id}\x1f{case.id}".encode()).hexdigest()[:16]
    return f"org_eval_{digest}"


def seed(cur: Any, org: str, day: date, rows: Mapping[str, Any]) -> None:
    """The case's rows, under ``org`` (the transaction's)."""
    orgs.upsert(cur, org, "Eval org")

    def item(kind: str, status: str) -> str:
        found = fetch_one(cur, ITEM, (org, kind, status, "AGT-005"))
        assert found is not None
        return str(found["id"])

    for deal in rows.get("deals") or []:
        cur.execute(DEAL, (org, deal["name"], deal["stage"], deal.get("value")))
    for kind in rows.get("pending") or []:
        item(kind, "pending")
    for message in rows.get("outbox") or []:
        made = item("outbound_message", "applied")
        cur.execute(OUTBOX, (org, made, None, "s", message["status"], at(day, message)))
    for piece in rows.get("published") or []:
        cur.execute(PUBLISHED, (org, item("content_piece", "applied"), at(day, piece)))
    for n, campaign in enumerate(rows.get("campaigns") or []):
        cur.execute(CAMPAIGN, (org, f"campaign {n}", campaign["status"]))
    for n, reply in enumerate(rows.get("replies") or []):
        contact = fetch_one(cur, CONTACT, (org, reply.get("from") or "a contact"))
        assert contact is not None
        # The message it answers went out days earlier: it is in no window the brief counts.
        earlier = datetime.combine(day, time(8), tzinfo=UTC) - timedelta(days=5)
        sent = fetch_one(
            cur,
            OUTBOX,
            (
                org,
                item("outbound_message", "applied"),
                contact["id"],
                f"step {n}",
                "replied",
                earlier,
            ),
        )
        assert sent is not None
        received = at(day, reply)
        cur.execute(
            REPLY,
            (
                org,
                sent["id"],
                contact["id"],
                f"<r{n}@eval>",
                reply["body"],
                reply["sentiment"],
                received,
            ),
        )


def write_brief(case: Case, env: Env) -> Outcome:
    outcome = Outcome()
    if env.db is None:
        outcome.status, outcome.error = "error", "no database: AGT-010's numbers are SQL"
        return outcome
    day = date.fromisoformat(str(case.inputs.get("brief_date") or TODAY))
    org = org_of(case, env)
    with env.db.transaction(org) as cur:
        seed(cur, org, day, case.inputs.get("rows") or {})
        data = brief.snapshot(cur, day)
        answered = brief.recent_replies(cur, day)
    outcome.facts["snapshot"] = json.loads(json.dumps(data, default=str))
    prior = case.inputs.get("prior_brief")
    yesterday = (day - timedelta(days=1)).isoformat()
    said = (
        f"Yesterday's brief ({yesterday}): {prior}"
        if prior
        else "Yesterday's brief: none on record."
    )
    built = AssemblyRequest(
        brief.AGENT,
        org,
        f"brief:{day.isoformat()}",
        org_context(case),
        exemplars(case, KC),
        {"data_snapshot": dict(data), "recent_replies": answered or "(no replies yesterday)"},
        [Message("assistant", said, name="summary")],
        {"brief_date": day.isoformat()},
        kc_queried=("KC-01",),
    )

    def fits(written: DailyBrief) -> list[str]:
        words = brief.word_count(brief.render(written.model_dump()))
        if words <= brief.MAX_WORDS:
            return []
        return [f"the brief has {words} words with its headings; the limit is {brief.MAX_WORDS}"]

    result = call(env, outcome, built, check=fits)
    if result is not None and result.output is not None:
        outcome.output = result.output.model_dump(mode="json")
        outcome.facts["rendered"] = brief.render(outcome.output)
    return outcome
