-- Migration 0039 (issue 31): what an org proved is its own outside our database (a Drive
-- folder today; later a sending domain, a CRM account, a company domain to research), one
-- org per resource. Never edit once shipped: append a new migration.
--
-- The key leads with org_id so the table can be distributed by org like every other
-- (migration 0033); "one org per resource" is therefore kept by the claim itself
-- (colony.store.claims): it takes the resource's advisory lock, names the resource in
-- ``app.claim_probe`` so the read-only ``claim_probe`` policy shows every org's row of that
-- one resource to its NOT EXISTS, and clears the setting before anything else runs.
CREATE TABLE resource_claims (
    org_id       text NOT NULL REFERENCES organizations(id),
    kind         text NOT NULL CHECK (kind ~ '^[a-z][a-z_]{1,39}$'),
    resource_id  text NOT NULL CHECK (length(resource_id) BETWEEN 1 AND 300),
    method       text NOT NULL CHECK (length(method) BETWEEN 1 AND 40),
    claimed_by   text NOT NULL,
    claimed_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, kind, resource_id)
);
CREATE INDEX resource_claims_resource ON resource_claims (kind, resource_id);
ALTER TABLE resource_claims ENABLE ROW LEVEL SECURITY;
ALTER TABLE resource_claims FORCE ROW LEVEL SECURITY;
CREATE POLICY org_isolation ON resource_claims
    USING (org_id = current_setting('app.org_id', true))
    WITH CHECK (org_id = current_setting('app.org_id', true));
CREATE POLICY claim_probe ON resource_claims FOR SELECT
    USING (kind || chr(10) || resource_id = current_setting('app.claim_probe', true));
-- A refusal of something an org named is audited like a refused decision; the admin API and
-- the CLI act as the org's admin, not through the page.
ALTER TABLE audit_log DROP CONSTRAINT audit_log_channel_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_channel_check
    CHECK (channel IN ('ui', 'link', 'chat-confirmed', 'system', 'sequence', 'admin'));
