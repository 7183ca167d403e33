"""What the chaos soak (``colony.local.soak``) writes to set its tenants up and reads to
check what happened. A local tool's statements, kept here with the others; each runs in a
transaction of one org (``Database.transaction(org_id)``), so RLS scopes it."""

from __future__ import annotations

from typing import Any

from colony.store.rows import Row, fetch_all, fetch_value

ONE_STEP = """
INSERT INTO sequences (org_id, angle, tier, step, delay_days, guidance)
VALUES (%s, %s, %s, 1, 0, 'one message, no follow-up')
"""
CAPS = """
INSERT INTO org_settings (org_id, sequence_approval, daily_send_cap, per_domain_hourly_cap)
VALUES (%s, 'once', 100000, 100000)
ON CONFLICT (org_id) DO UPDATE SET sequence_approval = 'once', daily_send_cap = 100000,
    per_domain_hourly_cap = 100000
"""
DEMO_CONTACTS = "SELECT id FROM contacts ORDER BY external_id"
CLONE = """
INSERT INTO contacts (org_id, external_id, name, title, email, company, company_domain,
                      enrichment, raw_enrichment_html, signals)
SELECT org_id, %s, name || %s, title, %s, company || %s, company_domain, enrichment,
       raw_enrichment_html, signals
FROM contacts WHERE id = %s RETURNING id
"""
PENDING = """
SELECT id FROM approval_items WHERE status = 'pending' AND kind = 'outbound_message'
ORDER BY created_at
"""
# Each contact of the campaign's runs: its chain's end (done:<contact>), its draft's decision
# and its message's state.
CONTACT_STATES = """
SELECT c.id AS contact_id,
       EXISTS (SELECT 1 FROM run_steps s WHERE s.run_id = ANY(%s)
               AND s.step_key = 'done:' || c.id AND s.status = 'done') AS chain_done,
       a.status AS item_status, o.status AS outbox_status
FROM contacts c
LEFT JOIN approval_items a ON a.subject_id = c.id AND a.kind = 'outbound_message'
    AND a.run_id = ANY(%s)
LEFT JOIN outbox o ON o.approval_item_id = a.id
WHERE c.id = ANY(%s)
"""
OUTBOX = """
SELECT o.message_id, o.status, a.status AS item_status FROM outbox o
JOIN approval_items a ON a.id = o.approval_item_id
"""
RUN_STATES = "SELECT status, count(*) AS n FROM campaign_runs WHERE id = ANY(%s) GROUP BY 1"
LLM_CALLS = "SELECT count(*) FROM llm_calls"
# A claim whose lease has lapsed and that nobody took over or released: held past expiry.
LAPSED_STEPS = """
SELECT count(*) FROM run_steps WHERE status = 'running' AND lease_until < now()
"""
LAPSED_SENDS = """
SELECT count(*) FROM outbox WHERE send_lease_until < now() AND status NOT IN
    ('sent', 'delivered', 'bounced', 'complained', 'replied', 'blocked', 'suppressed')
"""
DEAD_LETTERS = "SELECT topic, message_id, attempts, last_error FROM dead_letters ORDER BY id"
DONE_CONTACTS = """
SELECT count(*) FROM run_steps WHERE run_id = ANY(%s) AND step_key LIKE 'done:%%'
    AND status = 'done'
"""


def set_up_org(cur: Any, org_id: str, angle: str, tier: str) -> list[str]:
    """A one-step sequence and caps that do not defer; the demo contacts' ids to clone."""
    cur.execute("DELETE FROM sequences")
    cur.execute(ONE_STEP, (org_id, angle, tier))
    cur.execute(CAPS, (org_id,))
    return [str(r["id"]) for r in fetch_all(cur, DEMO_CONTACTS)]


def clone_contact(cur: Any, external_id: str, n: int, address: str, source: str) -> str:
    row = fetch_all(cur, CLONE, (external_id, f" {n}", address, f" #{n}", source))
    return str(row[0]["id"])


def pending_items(cur: Any) -> list[str]:
    return [str(r["id"]) for r in fetch_all(cur, PENDING)]


def contact_states(cur: Any, run_ids: list[str], contact_ids: list[str]) -> list[Row]:
    return fetch_all(cur, CONTACT_STATES, (run_ids, run_ids, contact_ids))


def outbox(cur: Any) -> list[Row]:
    return fetch_all(cur, OUTBOX)


def run_states(cur: Any, run_ids: list[str]) -> dict[str, int]:
    return {str(r["status"]): int(r["n"]) for r in fetch_all(cur, RUN_STATES, (run_ids,))}


def done_contacts(cur: Any, run_ids: list[str]) -> int:
    return int(fetch_value(cur, DONE_CONTACTS, (run_ids,)) or 0)


def llm_calls(cur: Any) -> int:
    return int(fetch_value(cur, LLM_CALLS) or 0)


def lapsed_leases(cur: Any) -> dict[str, int]:
    return {
        "run_steps": int(fetch_value(cur, LAPSED_STEPS) or 0),
        "sends": int(fetch_value(cur, LAPSED_SENDS) or 0),
    }


def dead_letters(cur: Any) -> list[Row]:
    return fetch_all(cur, DEAD_LETTERS)


RECORDING = "SELECT status FROM recordings ORDER BY created_at LIMIT 1"
NOTION_EMBEDDED = "SELECT count(DISTINCT source_id) FROM kc_chunks WHERE source = 'notion'"
FOLLOW_UPS = "SELECT count(*) FROM approval_items WHERE kind = 'follow_up'"


def other_work(cur: Any) -> dict[str, Any]:
    """The recording's state, the Notion pages embedded and the follow-ups drafted."""
    return {
        "recording": fetch_value(cur, RECORDING),
        "notion_pages_embedded": int(fetch_value(cur, NOTION_EMBEDDED) or 0),
        "follow_ups": int(fetch_value(cur, FOLLOW_UPS) or 0),
    }
