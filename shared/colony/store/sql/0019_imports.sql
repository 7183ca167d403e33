-- Imports (issue 17 item 3): one job per uploaded file (the file itself in GCS under
-- imports/<org>/<job>/), its checkpoint (records done, and what they became) and every
-- rejected record with its number and reason. Both tables are org-scoped (RLS below).
CREATE TABLE import_jobs (
    id              text PRIMARY KEY DEFAULT gen_random_uuid()::text,
    org_id          text NOT NULL REFERENCES organizations(id),
    kind            text NOT NULL CHECK (kind IN ('prospects', 'deals')),
    format          text NOT NULL CHECK (format IN ('csv', 'jsonl')),
    filename        text NOT NULL,
    object_name     text NOT NULL,
    declared_bytes  bigint NOT NULL CHECK (declared_bytes > 0),
    size_bytes      bigint,
    content_sha256  text,
    status          text NOT NULL DEFAULT 'awaiting_upload'
                    CHECK (status IN ('awaiting_upload', 'queued', 'running', 'completed',
                                      'failed')),
    failure         text,
    encoding        text,
    rows_total      integer,
    rows_done       integer NOT NULL DEFAULT 0,
    rows_created    integer NOT NULL DEFAULT 0,
    rows_updated    integer NOT NULL DEFAULT 0,
    rows_rejected   integer NOT NULL DEFAULT 0,
    requested_by    text NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    started_at      timestamptz,
    finished_at     timestamptz
);
CREATE INDEX import_jobs_org_time ON import_jobs (org_id, created_at DESC);
CREATE TABLE import_errors (
    org_id      text NOT NULL REFERENCES organizations(id),
    job_id      text NOT NULL REFERENCES import_jobs(id),
    row_number  integer NOT NULL,
    line        integer NOT NULL,
    field       text,
    reason      text NOT NULL,
    value       text,
    PRIMARY KEY (job_id, row_number)
);
-- Prospects keep their LinkedIn profile; re-imports find a prospect by email, then by
-- (name, company domain), case-insensitively, so both lookups are indexed.
ALTER TABLE contacts ADD COLUMN linkedin_url text;
CREATE INDEX contacts_org_email ON contacts (org_id, lower(email));
CREATE INDEX contacts_org_name_domain ON contacts (org_id, lower(name), lower(company_domain));
CREATE INDEX deals_org_name ON deals (org_id, lower(name));
