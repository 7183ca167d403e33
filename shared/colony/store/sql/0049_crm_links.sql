-- Migration 0049 (issue 36): which CRM record is which of ours. Never edit once shipped:
-- append a new migration.
--
-- crm_links: one row per CRM record an org's sync has seen (a HubSpot contact, company or
-- deal), keyed by the CRM's id. ``entity_id`` is our row (contacts.id, deals.id; companies
-- have no table of their own, so theirs stays NULL). ``remote_updated_at`` is the CRM's
-- ``updatedAt`` last applied: an event older than it changes nothing (webhooks arrive out
-- of order). A record deleted in the CRM is archived here (``archived_at``), never kept as
-- live; one merged into another names the survivor (``merged_into``).
CREATE TABLE crm_links (
    org_id            text NOT NULL REFERENCES organizations(id),
    provider          text NOT NULL CHECK (provider IN ('hubspot')),
    object_type       text NOT NULL CHECK (object_type IN ('contact', 'company', 'deal')),
    remote_id         text NOT NULL CHECK (length(remote_id) BETWEEN 1 AND 64),
    entity_id         text,
    remote_updated_at timestamptz,
    archived_at       timestamptz,
    merged_into       text CHECK (merged_into IS NULL OR length(merged_into) BETWEEN 1 AND 64),
    synced_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, provider, object_type, remote_id)
);
-- One of our rows is one CRM record of a type.
CREATE UNIQUE INDEX crm_links_entity
    ON crm_links (org_id, provider, object_type, entity_id) WHERE entity_id IS NOT NULL;
