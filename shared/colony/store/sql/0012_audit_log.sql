CREATE TABLE audit_log (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    org_id            text NOT NULL REFERENCES organizations(id),
    at                timestamptz NOT NULL DEFAULT now(),
    event             text NOT NULL CHECK (event IN ('decision', 'effect', 'refusal')),
    approval_item_id  text,
    item_kind         text,
    actor             text NOT NULL,
    channel           text NOT NULL CHECK (channel IN ('ui', 'link', 'chat-confirmed', 'system')),
    action            text NOT NULL,
    reason            text,
    detail            jsonb NOT NULL DEFAULT '{}',
    link_nonce        text UNIQUE
);
CREATE INDEX audit_log_org_time ON audit_log (org_id, at DESC, id DESC);
CREATE INDEX audit_log_item ON audit_log (org_id, approval_item_id);
