-- Migration 0053 (issue 35 items 1, 2 and 4): who owns a prospect or a deal, whose queue an
-- approval item waits in, how the org's team works (its time zone, the brief's local time,
-- its named backup, when an undecided item escalates, how new prospects are assigned), and
-- the schedules that serve it. Never edit once shipped: append a new migration.

-- How the org's team works (colony.flows.tenants.team). No row: the defaults (UTC, the brief
-- at 06:00, no backup, no escalation, round robin). The backup must be one of the org's
-- people: the key says so, for the org's own people only.
CREATE TABLE org_team (
    org_id               text PRIMARY KEY REFERENCES organizations(id),
    time_zone            text NOT NULL DEFAULT 'Etc/UTC'
                         CHECK (length(time_zone) BETWEEN 1 AND 64),
    brief_time           time NOT NULL DEFAULT '06:00',
    backup_user_id       text,
    escalate_after_hours integer CHECK (escalate_after_hours BETWEEN 1 AND 720),
    assignment           jsonb NOT NULL DEFAULT '{"rules": []}'::jsonb
                         CHECK (jsonb_typeof(assignment) = 'object'),
    updated_at           timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (org_id, backup_user_id) REFERENCES org_members (org_id, user_id)
);

-- Round robin's place in each pool of people (a rule's members, or every active member):
-- the last person given a prospect, so the next goes to the one after.
CREATE TABLE assignment_cursors (
    org_id        text NOT NULL REFERENCES organizations(id),
    pool          text NOT NULL CHECK (length(pool) BETWEEN 1 AND 200),
    last_user_id  text NOT NULL,
    PRIMARY KEY (org_id, pool)
);

-- The Clerk time of the last membership event applied: Svix does not order deliveries, so an
-- older event arriving later (an update after the deletion) is ignored.
ALTER TABLE org_members ADD COLUMN clerk_at timestamptz;

-- An owner is one of the org's people (active or, until handed on, left): the composite key
-- refuses another org's user at the database too. NOT VALID then VALIDATE, as in 0035.
SET LOCAL lock_timeout = '5s';
ALTER TABLE contacts ADD COLUMN owner_id text;
ALTER TABLE contacts ADD CONSTRAINT contacts_owner_fk FOREIGN KEY (org_id, owner_id)
    REFERENCES org_members (org_id, user_id) NOT VALID;
ALTER TABLE contacts VALIDATE CONSTRAINT contacts_owner_fk;
CREATE INDEX contacts_owner ON contacts (org_id, owner_id) WHERE owner_id IS NOT NULL;
ALTER TABLE deals ADD COLUMN owner_id text;
ALTER TABLE deals ADD CONSTRAINT deals_owner_fk FOREIGN KEY (org_id, owner_id)
    REFERENCES org_members (org_id, user_id) NOT VALID;
ALTER TABLE deals VALIDATE CONSTRAINT deals_owner_fk;
CREATE INDEX deals_owner ON deals (org_id, owner_id) WHERE owner_id IS NOT NULL;

-- Whose queue an item waits in: a person (``assignee``), or the org's admins
-- (``assignee_role``: KC candidates); neither: the team's, unassigned. ``routed_at`` starts
-- the escalation clock; an escalated item names whose it was.
ALTER TABLE approval_items
    ADD COLUMN assignee text,
    ADD COLUMN assignee_role text CHECK (assignee_role IN ('admin')),
    ADD COLUMN routed_at timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN escalated_at timestamptz,
    ADD COLUMN escalated_from text;
ALTER TABLE approval_items ADD CONSTRAINT approval_items_assignee_fk
    FOREIGN KEY (org_id, assignee) REFERENCES org_members (org_id, user_id) NOT VALID;
ALTER TABLE approval_items VALIDATE CONSTRAINT approval_items_assignee_fk;
CREATE INDEX approval_items_assignee ON approval_items (org_id, assignee)
    WHERE status = 'pending';

-- A change of owner (a reassignment, a leaver's hand-over, an escalation) is audited as an
-- 'assignment'.
ALTER TABLE audit_log DROP CONSTRAINT audit_log_event_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_event_check
    CHECK (event IN ('decision', 'effect', 'refusal', 'assignment'));

-- The hourly daily-brief schedule's audience, at the run's slot ``at`` (not now(): a retried
-- run, or one that starts late, serves the same orgs): each org whose local brief time has
-- passed on its local day at ``at`` and whose brief for that day is not stored, with that
-- local day. An org with no team row has the defaults (UTC, 06:00). Owner-run, as 0026's.
CREATE FUNCTION colony_brief_due_orgs(after text, page integer, at timestamptz)
RETURNS TABLE (org_id text, local_day date)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_catalog AS $$
    SELECT o.id, (at AT TIME ZONE coalesce(t.time_zone, 'Etc/UTC'))::date
    FROM organizations o LEFT JOIN org_team t ON t.org_id = o.id
    WHERE o.id > coalesce(after, '')
      AND NOT EXISTS (SELECT 1 FROM erasure_jobs j WHERE j.target_org = o.id
                      AND j.contact_id IS NULL AND j.status = 'pending')
      AND (at AT TIME ZONE coalesce(t.time_zone, 'Etc/UTC'))::time
          >= coalesce(t.brief_time, time '06:00')
      AND NOT EXISTS (SELECT 1 FROM daily_briefs b WHERE b.org_id = o.id
                      AND b.brief_date = (at AT TIME ZONE coalesce(t.time_zone, 'Etc/UTC'))::date)
    ORDER BY o.id
    LIMIT least(greatest(page, 1), 1000)
$$;

-- The schedules' lister (0048's, every audience kept) with one more: 'escalation' (orgs with
-- an item undecided past their escalation window and an active backup to hand it to).
CREATE OR REPLACE FUNCTION colony_scheduled_orgs(serves text, after text, page integer)
RETURNS SETOF text
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_catalog AS $$
BEGIN
    IF serves NOT IN ('orgs', 'notion', 'drive', 'research', 'sending_domains', 'held',
                      'escalation') THEN
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
                     AND a.routed_at < now() - make_interval(hours => t.escalate_after_hours))))
        ORDER BY o.id
        LIMIT least(greatest(page, 1), 1000);
END
$$;
