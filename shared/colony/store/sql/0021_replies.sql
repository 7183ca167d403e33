CREATE TABLE replies (
    id           text PRIMARY KEY DEFAULT gen_random_uuid()::text,
    org_id       text NOT NULL REFERENCES organizations(id),
    outbox_id    text NOT NULL REFERENCES outbox(id) ON DELETE CASCADE,
    contact_id   text REFERENCES contacts(id) ON DELETE CASCADE,
    deal_id      text REFERENCES deals(id) ON DELETE SET NULL,
    message_id   text NOT NULL CHECK (message_id <> ''),
    angle        text,
    body         text NOT NULL,
    sentiment    text NOT NULL CHECK (sentiment IN ('positive', 'negative', 'unknown')),
    received_at  timestamptz NOT NULL DEFAULT now(),
    created_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (org_id, message_id)
);
CREATE INDEX replies_org_time ON replies (org_id, received_at DESC);
CREATE INDEX replies_outbox ON replies (outbox_id);
CREATE POLICY message_lookup ON outbox FOR SELECT
    USING (message_id = current_setting('app.message_lookup', true));
