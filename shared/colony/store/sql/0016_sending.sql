ALTER TABLE outbox DROP CONSTRAINT outbox_status_check;
ALTER TABLE outbox ADD CONSTRAINT outbox_status_check CHECK (status IN (
    'queued', 'sending', 'sent', 'delivered', 'bounced', 'complained', 'replied', 'blocked',
    'suppressed'));
ALTER TABLE outbox ADD COLUMN message_id text UNIQUE;
ALTER TABLE outbox ADD COLUMN to_address text;
ALTER TABLE outbox ADD COLUMN send_lease_until timestamptz;
ALTER TABLE outbox ADD COLUMN sent_at timestamptz;
ALTER TABLE outbox ADD COLUMN send_error text;
CREATE TABLE suppressions (
    org_id      text NOT NULL REFERENCES organizations(id),
    address     text NOT NULL CHECK (address ~ '^[0-9a-f]{64}$'),  -- sha256 of lower(address)
    reason      text NOT NULL CHECK (reason IN ('unsubscribed', 'bounced', 'complained')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, address)
);
