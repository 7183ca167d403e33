-- Migration 0045 (issue 39 item 3): an org's sending domains, checked in DNS before any mail
-- goes from them, and re-checked daily. Why, in colony.store.migrations. Never edit once
-- shipped: append a new migration.
--
-- The DKIM private key is never here: it is in the secret store (Secret Manager), and the
-- row keeps only that secret's name. The public key is what the org publishes, so it is kept
-- to show it again and to compare with what DNS says. Which org a verified domain is bound
-- to is ``resource_claims`` (kind ``sending_domain``, migration 0039): one org per domain.
CREATE TABLE sending_domains (
    org_id       text NOT NULL REFERENCES organizations(id),
    domain       text NOT NULL CHECK (domain ~ '^[a-z0-9][a-z0-9.-]{2,252}$'),
    selector     text NOT NULL CHECK (selector ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
    public_key   text NOT NULL
                 CHECK (public_key ~ '^[A-Za-z0-9+/=]+$' AND length(public_key) BETWEEN 100 AND 2000),
    key_secret   text NOT NULL CHECK (key_secret ~ '^[A-Za-z0-9_-]{1,255}$'),
    -- pending: added, not (yet) passing; verified: passing, mail may go from it; paused: it
    -- passed once and broke since, so its mail waits until it passes again
    status       text NOT NULL DEFAULT 'pending'
                 CHECK (status IN ('pending', 'verified', 'paused')),
    problems     jsonb NOT NULL DEFAULT '[]'::jsonb,  -- the last check's, as shown to admins
    added_by     text NOT NULL,
    added_at     timestamptz NOT NULL DEFAULT now(),
    checked_at   timestamptz,
    verified_at  timestamptz,
    paused_at    timestamptz,
    PRIMARY KEY (org_id, domain),
    CHECK ((status = 'paused') = (paused_at IS NOT NULL))
);

-- The org's From address, until sender mailboxes (issue 39 item 2) choose one per contact;
-- NULL: the deployment's COLONY_MAIL_FROM.
ALTER TABLE org_settings ADD COLUMN mail_from text
    CHECK (mail_from IS NULL OR length(mail_from) BETWEEN 3 AND 320);

-- The daily re-check serves the orgs with a domain that was verified (passing or paused).
CREATE OR REPLACE FUNCTION colony_scheduled_orgs(serves text, after text, page integer)
RETURNS SETOF text
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_catalog AS $$
BEGIN
    IF serves NOT IN ('orgs', 'notion', 'drive', 'research', 'sending_domains') THEN
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
                   WHERE d.org_id = o.id AND d.status IN ('verified', 'paused'))))
        ORDER BY o.id
        LIMIT least(greatest(page, 1), 1000);
END
$$;
