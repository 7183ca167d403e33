"""ENT-005 campaigns and their runs, and what a run writes on its contacts (ENT-002).

Every function takes the cursor of a transaction opened under the campaign's org
(``Database.transaction(org_id)``), so RLS scopes each statement. Rules a caller relies on:

- a run counts each contact once (``contact_done`` runs inside the contact's ``done:<id>``
  durable step) and completes with its last contact;
- ``pause`` and ``resume`` (CONST-005, the circuit breaker) each change the campaign, its runs
  and its outbox rows (ENT-012) together, and return the ids of only the runs they moved, so
  a duplicate or late call moves nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from colony.store.db import Row, fetch_all, fetch_one, fetch_value

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
       raw_enrichment_html, signals, icp_score, icp_disqualifiers, icp_recommendation,
       updated_at
FROM contacts WHERE id = %s
"""
START_RUN = """
INSERT INTO campaign_runs (id, org_id, campaign_id, status, contacts_total)
VALUES (%s, %s, %s, %s, %s) ON CONFLICT (org_id, id) DO NOTHING
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
    icp_tier = %s, updated_at = now() WHERE id = %s
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
# FOR SHARE: a breaker pause cannot commit between this read and the outbox insert.
# Where one contact of a handoff stands in its run (colony.flows.campaigns.specialist): whether it
# is a contact of the run's campaign, and the status of the step the handoff follows, of the agent's
# own step and of the contact's ``done:`` step (NULL: never claimed). One round trip.
HANDOFF_STANDING = """
SELECT EXISTS (SELECT 1 FROM campaign_contacts WHERE campaign_id = %s AND contact_id = %s)
           AS member,
       (SELECT status FROM run_steps WHERE run_id = %s AND step_key = %s) AS previous,
       (SELECT status FROM run_steps WHERE run_id = %s AND step_key = %s) AS own,
       (SELECT status FROM run_steps WHERE run_id = %s AND step_key = %s) AS finished
"""
STATUS_FOR_SHARE = "SELECT status FROM campaigns WHERE id = %s FOR SHARE"
PAUSE_STATE = "SELECT status, paused_at FROM campaigns WHERE id = %s"
# The ``done:<contact id>`` durable steps of runs
# (``colony.flows.campaigns.campaign.contact_done``).
DONE_STEPS = (
    "SELECT run_id, step_key FROM run_steps WHERE run_id = ANY(%s)"
    " AND status = 'done' AND step_key LIKE 'done:%%'"
)


def create(
    cur: Any,
    org_id: str,
    *,
    name: str,
    angle: str,
    tier: str,
    bounce_threshold: float,
    complaint_threshold: float,
) -> str:
    """A new, active campaign; returns its id."""
    params = (org_id, name, angle, tier, bounce_threshold, complaint_threshold)
    return str(fetch_value(cur, CREATE_CAMPAIGN, params))


def add_contact(cur: Any, org_id: str, campaign_id: str, contact_id: str) -> None:
    """Put the contact in the campaign (once)."""
    cur.execute(ADD_CONTACT, (org_id, campaign_id, contact_id))


def get(cur: Any, campaign_id: str) -> Row | None:
    """The campaign (None: not in this org)."""
    return fetch_one(cur, CAMPAIGN, (campaign_id,))


def status_for_share(cur: Any, campaign_id: str) -> str | None:
    """The campaign's status, its row share-locked until the transaction ends (None: not in
    this org)."""
    row = fetch_one(cur, STATUS_FOR_SHARE, (campaign_id,))
    return str(row["status"]) if row else None


def pause_state(cur: Any, campaign_id: str) -> Row | None:
    """The campaign's status and when it was last paused (None: not in this org)."""
    return fetch_one(cur, PAUSE_STATE, (campaign_id,))


def contacts(cur: Any, campaign_id: str) -> list[Row]:
    """The campaign's contacts, in a stable order."""
    return fetch_all(cur, CAMPAIGN_CONTACTS, (campaign_id,))


def contact(cur: Any, contact_id: str) -> Row | None:
    """The contact as the specialists read it (None: not in this org)."""
    return fetch_one(cur, CONTACT, (contact_id,))


def set_score(
    cur: Any,
    contact_id: str,
    score: int,
    disqualifiers: Sequence[str],
    recommendation: str,
    tier: str | None = None,
) -> None:
    """Record the contact's ICP score, disqualifiers, recommendation and tier (the last two
    as policy decided them: colony.policy.tiering)."""
    params = (score, json.dumps(disqualifiers), recommendation, tier, contact_id)
    cur.execute(SET_SCORE, params)


def add_enrichment(cur: Any, contact_id: str, extra: Mapping[str, Any]) -> None:
    """Merge ``extra`` into the contact's enrichment (its keys win)."""
    cur.execute(SET_ENRICHMENT, (json.dumps(extra), contact_id))


def start_run(
    cur: Any, run_id: str, org_id: str, campaign_id: str, status: str, contacts_total: int
) -> None:
    """Record the run (once: a redelivered start changes nothing)."""
    cur.execute(START_RUN, (run_id, org_id, campaign_id, status, contacts_total))


def run(cur: Any, run_id: str) -> Row | None:
    """The run, with its campaign's angle, tier and status (None: not in this org)."""
    return fetch_one(cur, RUN, (run_id,))


def contact_done(cur: Any, run_id: str) -> None:
    """Count one more contact of the run as finished; the last one completes a running run."""
    cur.execute(CONTACT_DONE, (run_id,))


def complete_if_done(cur: Any, run_id: str) -> None:
    """Complete a running run whose contacts are all counted (e.g. none needed any work)."""
    cur.execute(COMPLETE_IF_DONE, (run_id,))


def handoff_standing(
    cur: Any,
    campaign_id: str,
    run_id: str,
    contact_id: str,
    *,
    previous_key: str,
    own_key: str,
    done_key: str,
) -> Row:
    """``member`` (bool) and the ``previous``, ``own`` and ``finished`` step statuses."""
    params = (campaign_id, contact_id, run_id, previous_key, run_id, own_key, run_id, done_key)
    row = fetch_one(cur, HANDOFF_STANDING, params)
    assert row is not None  # a SELECT without FROM always yields its one row
    return row


def done_steps(cur: Any, run_ids: Sequence[str]) -> list[Row]:
    """The finished ``done:<contact id>`` steps (run_id, step_key) of the runs."""
    return fetch_all(cur, DONE_STEPS, (list(run_ids),))


def pause(cur: Any, campaign_id: str, reason: str) -> list[str]:
    """Pause an active campaign: its running runs pause with ``reason`` and its queued outbox
    rows are blocked; returns the ids of the runs paused."""
    cur.execute(PAUSE_CAMPAIGN, (campaign_id,))
    paused = fetch_all(cur, PAUSE_RUNS, (reason, campaign_id))
    cur.execute(BLOCK_OUTBOX, (campaign_id,))
    return [r["id"] for r in paused]


def resume(cur: Any, campaign_id: str, run_id: str | None = None) -> list[str]:
    """Re-activate a paused campaign: its blocked outbox rows are queued again and its paused
    runs (or only ``run_id``) run again; returns the ids of the runs resumed."""
    cur.execute(ACTIVATE_CAMPAIGN, (campaign_id,))
    cur.execute(UNBLOCK_OUTBOX, (campaign_id,))
    return [r["id"] for r in fetch_all(cur, RESUME_RUNS, (campaign_id, run_id, run_id))]


# ─── a launch from the chat (AGT-001's launch_campaign tool) ─────────────────────────────
# The ids are the caller's (derived from the tool call), and every write is ON CONFLICT DO
# NOTHING: an approval applied twice launches once.

CONTACTS_FOR_LAUNCH = """
SELECT id FROM contacts WHERE (%s::text[] IS NULL OR external_id = ANY(%s::text[]))
ORDER BY external_id NULLS LAST, id LIMIT 500
"""
LAUNCH_CAMPAIGN = """
INSERT INTO campaigns (id, org_id, name, angle, tier, status)
VALUES (%s, %s, %s, %s, %s, 'active') ON CONFLICT (org_id, id) DO NOTHING
"""
# The run row is written here (seed §4.2: the tool invocation is serialised to campaign_runs);
# AGT-002's start inserts the same id with ON CONFLICT DO NOTHING, so the two agree.
LAUNCH_RUN = """
INSERT INTO campaign_runs (id, org_id, campaign_id, status, contacts_total)
SELECT %s, %s, c.id, CASE WHEN c.status = 'paused' THEN 'paused' ELSE 'running' END,
       (SELECT count(*) FROM campaign_contacts cc WHERE cc.campaign_id = c.id)
FROM campaigns c WHERE c.id = %s
ON CONFLICT (org_id, id) DO NOTHING
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
