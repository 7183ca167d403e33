"""Prospects as records a person works through (issue 34 item 1): a filtered page of the org's
contacts with what a list shows of each, and one prospect with its signals, sequences, the
messages sent to them and the replies to each, and the decisions about them.

A prospect's state is read, never stored twice: its sequences (``sequence_enrollments``),
whether they replied (``replies``), and AGT-004's recommendation on the contact. Every
function takes a cursor from ``Database.transaction(org_id)`` (RLS scopes it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from colony.store.db import Row, fetch_all, fetch_one, fetch_value

# One row per prospect, with what the list filters on computed beside it.
_FACTS = """
WITH facts AS (
  SELECT c.id, c.name, c.title, c.company, c.email, c.icp_score, c.icp_tier,
         c.icp_recommendation, c.updated_at,
         coalesce((SELECT array_agg(DISTINCT cc.campaign_id) FROM campaign_contacts cc
                   WHERE cc.contact_id = c.id), '{}') AS campaign_ids,
         coalesce((SELECT array_agg(DISTINCT s.type) FROM contact_signals s
                   WHERE s.org_id = c.org_id AND s.contact_id = c.id), '{}') AS signal_types,
         EXISTS (SELECT 1 FROM replies r WHERE r.contact_id = c.id) AS replied,
         (SELECT e.status FROM sequence_enrollments e WHERE e.org_id = c.org_id
            AND e.contact_id = c.id ORDER BY (e.status = 'active') DESC, e.updated_at DESC
            LIMIT 1) AS sequence_status
  FROM contacts c
)
"""
# The filters once, as a row the WHERE reads (the driver's parameters are positional).
_WHERE = """
CROSS JOIN (SELECT %s::text AS tier, %s::int AS min_score, %s::int AS max_score,
                   %s::text AS status, %s::text AS campaign, %s::text AS signal,
                   %s::boolean AS replied, %s::text AS needle) p
WHERE (p.tier IS NULL OR facts.icp_tier = p.tier)
  AND (p.min_score IS NULL OR facts.icp_score >= p.min_score)
  AND (p.max_score IS NULL OR facts.icp_score <= p.max_score)
  AND (p.status IS NULL OR coalesce(facts.sequence_status, 'none') = p.status)
  AND (p.campaign IS NULL OR p.campaign = ANY(facts.campaign_ids))
  AND (p.signal IS NULL OR p.signal = ANY(facts.signal_types))
  AND (p.replied IS NULL OR facts.replied = p.replied)
  AND (p.needle IS NULL
       OR strpos(lower(facts.name || ' ' || facts.company || ' ' || coalesce(facts.email, '')),
                 p.needle) > 0)
"""
_PAGE = (
    _FACTS
    + "SELECT facts.* FROM facts"
    + _WHERE
    + "ORDER BY facts.icp_score DESC NULLS LAST, facts.name, facts.id LIMIT %s OFFSET %s"
)
_COUNT = _FACTS + "SELECT count(*) FROM facts" + _WHERE

_CONTACT = """
SELECT id, name, title, email, company, company_domain, linkedin_url, timezone, icp_score,
       icp_tier, icp_recommendation, icp_disqualifiers, enrichment, created_at, updated_at
FROM contacts WHERE id = %s
"""
_SIGNALS = """
SELECT type, detail, quote, source, confidence, observed_on, agent_id, created_at
FROM contact_signals WHERE contact_id = %s ORDER BY observed_on DESC NULLS LAST, created_at DESC
"""
_SEQUENCES = """
SELECT e.campaign_id, c.name AS campaign, e.angle, e.tier, e.step, e.steps, e.status,
       e.stop_reason, e.next_due_at, e.updated_at
FROM sequence_enrollments e JOIN campaigns c ON c.id = e.campaign_id
WHERE e.contact_id = %s ORDER BY e.created_at DESC
"""
_MESSAGES = """
SELECT o.id, o.campaign_id, o.sequence_step, o.subject, o.body, o.status, o.to_address,
       o.sent_at, o.created_at,
       coalesce((SELECT jsonb_agg(jsonb_build_object('id', r.id, 'body', r.body,
                   'sentiment', r.sentiment, 'received_at', r.received_at)
                   ORDER BY r.received_at)
                 FROM replies r WHERE r.outbox_id = o.id), '[]'::jsonb) AS replies
FROM outbox o WHERE o.contact_id = %s ORDER BY o.created_at, o.sequence_step
"""
_TRAIL = """
SELECT a.at, a.event, a.actor, a.channel, a.action, a.reason, a.item_kind, a.approval_item_id
FROM audit_log a JOIN approval_items i ON i.id = a.approval_item_id
WHERE i.subject_id = %s ORDER BY a.at DESC, a.id DESC LIMIT 200
"""
# AGT-004's latest reasons for the score (its durable step's output: the dimension scores, the
# reasoning, the rule that set the tier).
_QUALIFIED = """
SELECT output, created_at FROM run_steps WHERE step_key = 'qualify:' || %s
ORDER BY created_at DESC LIMIT 1
"""
_CAMPAIGN_NAMES = "SELECT id, name FROM campaigns WHERE id = ANY(%s)"


@dataclass(frozen=True, slots=True)
class Filters:
    """What the list is narrowed by; None is "any"."""

    tier: str | None = None
    min_score: int | None = None
    max_score: int | None = None
    status: str | None = None  # a sequence's: active, completed, stopped, or none
    campaign: str | None = None
    signal: str | None = None
    replied: bool | None = None
    text: str | None = None


def page(cur: Any, filters: Filters, limit: int, offset: int) -> tuple[list[Row], int]:
    """A page of prospects (best ICP score first) and how many match in all."""
    needle = filters.text.lower() if filters.text else None
    params = [
        filters.tier,
        filters.min_score,
        filters.max_score,
        filters.status,
        filters.campaign,
        filters.signal,
        filters.replied,
        needle,
    ]
    rows = fetch_all(cur, _PAGE, [*params, limit, offset])
    return rows, int(fetch_value(cur, _COUNT, params))


def campaign_names(cur: Any, ids: list[str]) -> dict[str, str]:
    return {r["id"]: r["name"] for r in fetch_all(cur, _CAMPAIGN_NAMES, (ids,))} if ids else {}


def prospect(cur: Any, contact_id: str) -> dict[str, Any] | None:
    """One prospect with its signals, sequences, messages (each with its replies) and the
    decisions about them; None when the org has no such contact."""
    contact = fetch_one(cur, _CONTACT, (contact_id,))
    if contact is None:
        return None
    return {
        "contact": contact,
        "qualified": fetch_one(cur, _QUALIFIED, (contact_id,)),
        "signals": fetch_all(cur, _SIGNALS, (contact_id,)),
        "sequences": fetch_all(cur, _SEQUENCES, (contact_id,)),
        "messages": fetch_all(cur, _MESSAGES, (contact_id,)),
        "trail": fetch_all(cur, _TRAIL, (contact_id,)),
    }
