"""ENT-005 campaigns and runs, ENT-011 approval items, ENT-012 outbox: named SQL.

Every statement runs under ``Database.transaction(org_id)``: RLS scopes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from colony.store.db import fetch_all

CREATE_CAMPAIGN = """
INSERT INTO campaigns (org_id, name, angle, tier, status, bounce_threshold, complaint_threshold)
VALUES (%s, %s, %s, %s, 'active', %s, %s) RETURNING id
"""
ADD_CONTACT = """
INSERT INTO campaign_contacts (org_id, campaign_id, contact_id) VALUES (%s, %s, %s)
ON CONFLICT DO NOTHING
"""
CAMPAIGN = """
SELECT id, name, angle, tier, status, bounce_threshold, complaint_threshold
FROM campaigns WHERE id = %s
"""
CAMPAIGN_CONTACTS = """
SELECT c.id, c.external_id, c.name, c.title, c.email, c.company, c.company_domain,
       c.enrichment, c.signals
FROM campaign_contacts cc JOIN contacts c ON c.id = cc.contact_id
WHERE cc.campaign_id = %s ORDER BY c.external_id NULLS LAST, c.id
"""
CONTACT = """
SELECT id, external_id, name, title, email, company, company_domain, enrichment,
       raw_enrichment_html, signals, icp_score, icp_disqualifiers, icp_recommendation
FROM contacts WHERE id = %s
"""
START_RUN = """
INSERT INTO campaign_runs (id, org_id, campaign_id, status, contacts_total)
VALUES (%s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING
"""
RUN = """
SELECT r.id, r.campaign_id, r.status, r.contacts_total, r.contacts_done, r.paused_reason,
       c.angle, c.tier, c.status AS campaign_status
FROM campaign_runs r JOIN campaigns c ON c.id = r.campaign_id WHERE r.id = %s
"""
CONTACT_DONE = """
UPDATE campaign_runs SET contacts_done = contacts_done + 1,
    status = CASE WHEN contacts_done + 1 >= contacts_total AND status = 'running'
                  THEN 'completed' ELSE status END,
    finished_at = CASE WHEN contacts_done + 1 >= contacts_total AND status = 'running'
                       THEN now() ELSE finished_at END
WHERE id = %s
"""
COMPLETE_IF_DONE = """
UPDATE campaign_runs SET status = 'completed', finished_at = now()
WHERE id = %s AND status = 'running' AND contacts_done >= contacts_total
"""
SET_SCORE = """
UPDATE contacts SET icp_score = %s, icp_disqualifiers = %s::jsonb, icp_recommendation = %s,
    updated_at = now() WHERE id = %s
"""
SET_ENRICHMENT = """
UPDATE contacts SET enrichment = enrichment || %s::jsonb, updated_at = now() WHERE id = %s
"""
PAUSE_CAMPAIGN = """
UPDATE campaigns SET status = 'paused', paused_at = now() WHERE id = %s AND status = 'active'
"""
PAUSE_RUNS = """
UPDATE campaign_runs SET status = 'paused', paused_reason = %s
WHERE campaign_id = %s AND status = 'running' RETURNING id
"""
BLOCK_OUTBOX = """
UPDATE outbox SET status = 'blocked', updated_at = now()
WHERE campaign_id = %s AND status = 'queued'
"""
RESUME_RUNS = """
UPDATE campaign_runs SET status = 'running', paused_reason = NULL
WHERE campaign_id = %s AND status = 'paused' AND (%s::text IS NULL OR id = %s) RETURNING id
"""
ACTIVATE_CAMPAIGN = """
UPDATE campaigns SET status = 'active', resumed_at = now() WHERE id = %s AND status = 'paused'
"""
UNBLOCK_OUTBOX = """
UPDATE outbox SET status = 'queued', updated_at = now()
WHERE campaign_id = %s AND status = 'blocked'
"""
APPROVAL_QUEUE = """
SELECT id, kind, status, source_agent, run_id, subject_id, payload, created_at
FROM approval_items WHERE (%s::text IS NULL OR run_id = %s) ORDER BY created_at, id
"""

# ─── a launch from the chat (AGT-001's launch_campaign tool) ─────────────────────────────
# The ids are the caller's (derived from the tool call), and every write is ON CONFLICT DO
# NOTHING: an approval applied twice launches once.

CONTACTS_FOR_LAUNCH = """
SELECT id FROM contacts WHERE (%s::text[] IS NULL OR external_id = ANY(%s::text[]))
ORDER BY external_id NULLS LAST, id LIMIT 500
"""
LAUNCH_CAMPAIGN = """
INSERT INTO campaigns (id, org_id, name, angle, tier, status)
VALUES (%s, %s, %s, %s, %s, 'active') ON CONFLICT (id) DO NOTHING
"""
# The run row is written here (seed §4.2: the tool invocation is serialised to campaign_runs);
# AGT-002's start inserts the same id with ON CONFLICT DO NOTHING, so the two agree.
LAUNCH_RUN = """
INSERT INTO campaign_runs (id, org_id, campaign_id, status, contacts_total)
SELECT %s, %s, c.id, CASE WHEN c.status = 'paused' THEN 'paused' ELSE 'running' END,
       (SELECT count(*) FROM campaign_contacts cc WHERE cc.campaign_id = c.id)
FROM campaigns c WHERE c.id = %s
ON CONFLICT (id) DO NOTHING
"""


def contacts_for_launch(cur: Any, external_ids: Sequence[str] | None) -> list[Any]:
    """The ids of the contacts named by ``external_ids`` (None: all), at most 500."""
    wanted = list(external_ids) if external_ids is not None else None
    return [r["id"] for r in fetch_all(cur, CONTACTS_FOR_LAUNCH, (wanted, wanted))]


def launch(
    cur: Any,
    org_id: str,
    campaign_id: str,
    run_id: str,
    *,
    name: str,
    angle: str,
    tier: str,
    contact_ids: Sequence[Any],
) -> None:
    """Create the campaign, its contacts and its run row (the run counts the contacts)."""
    cur.execute(LAUNCH_CAMPAIGN, (campaign_id, org_id, name, angle, tier))
    for contact_id in contact_ids:
        cur.execute(ADD_CONTACT, (org_id, campaign_id, contact_id))
    cur.execute(LAUNCH_RUN, (run_id, org_id, campaign_id))
