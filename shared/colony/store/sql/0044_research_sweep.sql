-- Migration 0044 (issue 33): the research-sweep schedule serves the orgs with a stalled
-- research pass (running, no lease, untouched for colony.store.research.jobs.STALLED_AFTER);
-- why, in colony.store.migrations. Never edit once shipped: append a new migration.
CREATE OR REPLACE FUNCTION colony_scheduled_orgs(serves text, after text, page integer)
RETURNS SETOF text
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_catalog AS $$
BEGIN
    IF serves NOT IN ('orgs', 'notion', 'drive', 'research') THEN
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
                     AND r.touched_at < now() - interval '1800 seconds')))
        ORDER BY o.id
        LIMIT least(greatest(page, 1), 1000);
END
$$;
