-- Migration 0058 (issue 36, the inbound half): HubSpot's records kept in step with ours. Never
-- edit once shipped: append a new migration.
--
-- crm_stage_map (0055_crm_write_back's, our stage → one CRM stage) becomes the one, editable
-- mapping, read both ways: from a CRM pipeline and stage to our deal stage, keyed by the CRM
-- stage (several of HubSpot's stages may be one of ours), with who edited it and when. A deal
-- in a stage with no row here is kept (its link holds what we read, ``held``) and flagged for
-- a person (``unmapped_stage``), never dropped; mapping the stage releases it. Write-back
-- sends our stage as the row naming it (``colony.store.crm.stages.remote_stage``). Rows that
-- 0055 allowed and this key does not (two of our stages on one CRM stage) keep the one
-- write-back's reading already answered: the first of our stages by name. RLS is lifted
-- from the owner for that one statement (the owner is FORCEd like the application role).
ALTER TABLE crm_stage_map NO FORCE ROW LEVEL SECURITY;
DELETE FROM crm_stage_map a USING crm_stage_map b
WHERE a.org_id = b.org_id AND a.provider = b.provider AND a.pipeline_id = b.pipeline_id
  AND a.stage_id = b.stage_id AND a.stage > b.stage;
ALTER TABLE crm_stage_map FORCE ROW LEVEL SECURITY;
ALTER TABLE crm_stage_map DROP CONSTRAINT crm_stage_map_pkey;
ALTER TABLE crm_stage_map ADD PRIMARY KEY (org_id, provider, pipeline_id, stage_id);
ALTER TABLE crm_stage_map ADD COLUMN updated_by text NOT NULL DEFAULT '0058_crm_sync';
ALTER TABLE crm_stage_map ALTER COLUMN updated_by DROP DEFAULT;
ALTER TABLE crm_stage_map ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now();
-- What the sync last read of a record (the fields it maps: a company's name and domain, which
-- have no table of ours; a held deal's whole shape), and a deal's unmapped 'pipeline/stage'.
ALTER TABLE crm_links ADD COLUMN properties jsonb NOT NULL DEFAULT '{}'::jsonb;
ALTER TABLE crm_links ADD COLUMN unmapped_stage text
    CHECK (unmapped_stage IS NULL OR length(unmapped_stage) BETWEEN 1 AND 129);
CREATE INDEX crm_links_unmapped ON crm_links (org_id, provider, unmapped_stage)
    WHERE unmapped_stage IS NOT NULL;
-- A CRM backfill is an import job with no file: its position is ``cursor`` (the object type
-- and HubSpot's paging cursor), checkpointed with each page.
ALTER TABLE import_jobs DROP CONSTRAINT import_jobs_kind_check;
ALTER TABLE import_jobs ADD CONSTRAINT import_jobs_kind_check
    CHECK (kind IN ('prospects', 'deals', 'crm'));
ALTER TABLE import_jobs DROP CONSTRAINT import_jobs_format_check;
ALTER TABLE import_jobs ADD CONSTRAINT import_jobs_format_check
    CHECK (format IN ('csv', 'jsonl', 'hubspot'));
ALTER TABLE import_jobs ALTER COLUMN object_name DROP NOT NULL;
ALTER TABLE import_jobs ALTER COLUMN declared_bytes DROP NOT NULL;
ALTER TABLE import_jobs ADD CONSTRAINT import_jobs_file_check
    CHECK (kind = 'crm' OR (object_name IS NOT NULL AND declared_bytes IS NOT NULL));
ALTER TABLE import_jobs ADD COLUMN cursor jsonb;
-- A backfill stops as 'paused' when the org's connection is paused (its token refused) and
-- resumes from its cursor when an admin starts it again after reconnecting.
ALTER TABLE import_jobs DROP CONSTRAINT import_jobs_status_check;
ALTER TABLE import_jobs ADD CONSTRAINT import_jobs_status_check
    CHECK (status IN ('awaiting_upload', 'queued', 'running', 'completed', 'failed', 'paused'));
CREATE UNIQUE INDEX import_jobs_one_crm_backfill ON import_jobs (org_id)
    WHERE kind = 'crm' AND status IN ('queued', 'running', 'paused');
-- Webhook events, kept before they are applied (idempotent on the CRM's event id): one the
-- sync could not apply yet (the connection paused, a limit reached) waits here for the next
-- delivery or the daily reconciliation, never lost.
CREATE TABLE crm_events (
    org_id       text NOT NULL REFERENCES organizations(id),
    provider     text NOT NULL CHECK (provider IN ('hubspot')),
    event_id     text NOT NULL CHECK (length(event_id) BETWEEN 1 AND 64),
    object_type  text NOT NULL CHECK (object_type IN ('contact', 'company', 'deal')),
    object_id    text NOT NULL CHECK (length(object_id) BETWEEN 1 AND 64),
    action       text NOT NULL CHECK (action IN ('change', 'deletion', 'merge')),
    merged_ids   jsonb NOT NULL DEFAULT '[]'::jsonb,
    occurred_at  timestamptz NOT NULL,
    received_at  timestamptz NOT NULL DEFAULT now(),
    applied_at   timestamptz,
    outcome      text,
    PRIMARY KEY (org_id, provider, event_id)
);
CREATE INDEX crm_events_pending ON crm_events (org_id, provider, occurred_at)
    WHERE applied_at IS NULL;
-- The reconciliation's watermark: every change up to here was applied.
ALTER TABLE crm_connections ADD COLUMN synced_through timestamptz;
-- HubSpot's limits per portal, shared by every instance: the calls of each second of the
-- rolling window and of each day. Keyed by the portal (a portal is one org's: resource_claims),
-- not by org, so it carries no RLS: it names no record, only counts.
CREATE TABLE crm_rate_usage (
    provider   text NOT NULL CHECK (provider IN ('hubspot')),
    account_id text NOT NULL CHECK (length(account_id) BETWEEN 1 AND 64),
    bucket     bigint NOT NULL,
    daily      boolean NOT NULL,
    calls      integer NOT NULL CHECK (calls >= 0),
    PRIMARY KEY (provider, account_id, daily, bucket)
);
-- A contact or deal whose CRM record was deleted (or merged away) is archived, never kept as
-- live: readers that must not act on it filter on ``archived_at IS NULL``.
ALTER TABLE contacts ADD COLUMN archived_at timestamptz;
ALTER TABLE deals ADD COLUMN archived_at timestamptz;
-- Row-level security of the new org table (as ``migrations._rls`` writes it).
ALTER TABLE crm_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE crm_events FORCE ROW LEVEL SECURITY;
CREATE POLICY org_isolation ON crm_events
    USING (org_id = current_setting('app.org_id', true))
    WITH CHECK (org_id = current_setting('app.org_id', true));
-- The daily reconciliation's audience ('crm': orgs with a connected HubSpot), added to the
-- schedules' fan-out. Every audience of the latest definition (0054_notifications') is kept
-- as it was.
CREATE OR REPLACE FUNCTION colony_scheduled_orgs(serves text, after text, page integer)
RETURNS SETOF text
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_catalog AS $$
BEGIN
    IF serves NOT IN ('orgs', 'notion', 'drive', 'research', 'sending_domains', 'held',
                      'escalation', 'notify', 'crm') THEN
        RAISE EXCEPTION 'unknown schedule audience %', serves USING ERRCODE = '22023';
    END IF;
    RETURN QUERY
        SELECT o.id FROM organizations o
        WHERE o.id > coalesce(after, '')
          AND NOT EXISTS (SELECT 1 FROM erasure_jobs j WHERE j.target_org = o.id
                          AND j.contact_id IS NULL AND j.status = 'pending')
          AND (serves = 'orgs'
               OR (serves = 'notion' AND EXISTS (SELECT 1 FROM notion_workspaces w
                   WHERE w.org_id = o.id AND w.status = 'connected'))
               OR (serves = 'drive' AND EXISTS (SELECT 1 FROM drive_channels c
                   WHERE c.org_id = o.id AND c.status = 'active'))
               OR (serves = 'research' AND EXISTS (SELECT 1 FROM research_jobs r
                   WHERE r.org_id = o.id AND r.status = 'running'
                     AND (r.lease_until IS NULL OR r.lease_until < now())
                     AND r.touched_at < now() - interval '1800 seconds'))
               OR (serves = 'sending_domains' AND EXISTS (SELECT 1 FROM sending_domains d
                   WHERE d.org_id = o.id AND d.status IN ('verified', 'paused')))
               OR (serves = 'held' AND EXISTS (SELECT 1 FROM budget_holds h
                   WHERE h.org_id = o.id AND h.released_at IS NULL))
               OR (serves = 'escalation' AND EXISTS (SELECT 1 FROM org_team t
                   JOIN approval_items a ON a.org_id = t.org_id AND a.status = 'pending'
                   JOIN org_members m ON m.org_id = t.org_id AND m.user_id = t.backup_user_id
                        AND m.status = 'active'
                   WHERE t.org_id = o.id AND t.escalate_after_hours IS NOT NULL
                     AND a.escalated_at IS NULL
                     AND a.assignee IS DISTINCT FROM t.backup_user_id
                     AND a.routed_at < now() - make_interval(hours => t.escalate_after_hours)))
               OR (serves = 'notify' AND (
                   EXISTS (SELECT 1 FROM notification_events e
                           WHERE e.org_id = o.id AND e.dispatched_at IS NULL)
                   OR EXISTS (SELECT 1 FROM notifications n
                              WHERE n.org_id = o.id AND n.status IN ('pending', 'sending')
                                AND n.due_at <= now()
                                AND (n.lease_until IS NULL OR n.lease_until < now()))
                   OR EXISTS (SELECT 1 FROM notify_settings s
                              WHERE s.org_id = o.id AND s.brief_next_at <= now())))
               OR (serves = 'crm' AND EXISTS (SELECT 1 FROM crm_connections c
                   WHERE c.org_id = o.id AND c.status = 'connected')))
        ORDER BY o.id
        LIMIT least(greatest(page, 1), 1000);
END
$$;
