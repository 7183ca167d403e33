"""Campaign funnels (ENT-005 over ENT-002, ENT-011, ENT-012): how far each of an org's recent
campaigns has come, counted per contact in one statement.

    contacts   the campaign's contacts
    qualified  of those, the ones whose ICP recommendation now is ``qualify`` (AGT-004's
               score as policy decided it; a contact's standing, shared by its campaigns)
    drafted    contacts with a sequence step drafted in this campaign (any status): an
               outbound message, or a LinkedIn or call task for a person
    approved   contacts whose drafted step a person approved (``approved`` / ``applied``;
               a task: done)
    sent       contacts with a message of this campaign that left the outbox
    replied    contacts who replied to one (the outbox row says so, or a reply is on record)

Takes the cursor of a transaction opened under the org (``Database.transaction(org_id)``):
RLS scopes every table read, so no part filters on org itself. Whatever changes these counts
notifies ``colony_campaigns`` with ``<org id>`` (triggers, migration 0038; approval items
notify ``colony_approvals``), which the chat function's hub turns into the funnels' live
stream (``colony.chat.hub``); ``listen`` takes the hub's own dedicated connection.
"""

from __future__ import annotations

from typing import Any

from colony.store.db import Row, fetch_all

CHANNEL = "colony_campaigns"
LISTEN = f"LISTEN {CHANNEL}"
STAGES = ("contacts", "qualified", "drafted", "approved", "sent", "replied")
# Each table is read once, grouped by campaign, and only for the recent campaigns.
RECENT = """
WITH recent AS (
    SELECT id, name, angle, tier, status, created_at FROM campaigns
    ORDER BY created_at DESC, id DESC LIMIT %s
), members AS (
    SELECT cc.campaign_id, count(*) AS contacts,
           count(*) FILTER (WHERE c.icp_recommendation = 'qualify') AS qualified
    FROM campaign_contacts cc JOIN contacts c ON c.id = cc.contact_id
    WHERE cc.campaign_id IN (SELECT id FROM recent) GROUP BY cc.campaign_id
), drafts AS (
    SELECT a.payload->>'campaign_id' AS campaign_id,
           count(DISTINCT a.payload->>'contact_id') AS drafted,
           count(DISTINCT a.payload->>'contact_id')
               FILTER (WHERE a.status IN ('approved', 'applied')) AS approved
    FROM approval_items a
    WHERE a.kind IN ('outbound_message', 'sequence_task')
      AND a.payload->>'campaign_id' IN (SELECT id FROM recent)
    GROUP BY 1
), mail AS (
    SELECT o.campaign_id,
           count(DISTINCT o.contact_id) FILTER (WHERE o.status IN
               ('sent', 'delivered', 'bounced', 'complained', 'replied')) AS sent,
           count(DISTINCT o.contact_id) FILTER (WHERE o.status = 'replied'
               OR EXISTS (SELECT 1 FROM replies r WHERE r.outbox_id = o.id)) AS replied
    FROM outbox o WHERE o.campaign_id IN (SELECT id FROM recent) GROUP BY o.campaign_id
), runs AS (
    SELECT campaign_id, count(*) FILTER (WHERE status = 'running') AS running,
           coalesce(sum(contacts_done) FILTER (WHERE status = 'running'), 0) AS run_done,
           coalesce(sum(contacts_total) FILTER (WHERE status = 'running'), 0) AS run_total
    FROM campaign_runs WHERE campaign_id IN (SELECT id FROM recent) GROUP BY campaign_id
)
SELECT r.id, r.name, r.angle, r.tier, r.status, r.created_at,
       coalesce(m.contacts, 0) AS contacts, coalesce(m.qualified, 0) AS qualified,
       coalesce(d.drafted, 0) AS drafted, coalesce(d.approved, 0) AS approved,
       coalesce(o.sent, 0) AS sent, coalesce(o.replied, 0) AS replied,
       coalesce(u.running, 0) > 0 AS running, coalesce(u.run_done, 0) AS run_done,
       coalesce(u.run_total, 0) AS run_total
FROM recent r
LEFT JOIN members m ON m.campaign_id = r.id
LEFT JOIN drafts d ON d.campaign_id = r.id
LEFT JOIN mail o ON o.campaign_id = r.id
LEFT JOIN runs u ON u.campaign_id = r.id
ORDER BY r.created_at DESC, r.id DESC
"""


def recent(cur: Any, limit: int) -> list[Row]:
    """The ``limit`` newest campaigns, newest first: id, name, angle, tier, status,
    created_at, ``running`` (a run is going), ``run_done`` / ``run_total`` (the contacts its
    running runs have finished, of how many) and the count of each of ``STAGES``."""
    return fetch_all(cur, RECENT, (limit,))


def listen(conn: Any) -> None:
    """``LISTEN`` on the campaigns channel (the hub's dedicated autocommit connection)."""
    conn.execute_simple(LISTEN)
