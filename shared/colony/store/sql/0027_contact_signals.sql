-- Migration 0027 (issue 19 items 1-2): AGT-003's signals kept per contact with their
-- provenance, and the tier policy decided for a contact's score; why, in
-- colony.store.migrations. Never edit once shipped: append a new migration.
CREATE UNIQUE INDEX contacts_org_id_id ON contacts (org_id, id);
ALTER TABLE contacts ADD COLUMN icp_tier text
    CHECK (icp_tier IN ('T1', 'T2', 'T3', 'T4', 'T5'));

CREATE TABLE contact_signals (
    org_id       text NOT NULL REFERENCES organizations(id),
    contact_id   text NOT NULL,
    signal_key   text NOT NULL CHECK (signal_key <> ''),
    type         text NOT NULL CHECK (type <> ''),
    detail       text NOT NULL CHECK (detail <> ''),
    quote        text NOT NULL CHECK (quote <> ''),
    source       text NOT NULL CHECK (source <> ''),
    confidence   real NOT NULL CHECK (confidence BETWEEN 0 AND 1),
    observed_on  date,
    agent_id     text NOT NULL DEFAULT 'AGT-003',
    run_id       text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, contact_id, signal_key),
    FOREIGN KEY (org_id, contact_id) REFERENCES contacts (org_id, id)
);
