CREATE TABLE sequence_enrollments (
    org_id        text NOT NULL REFERENCES organizations(id),
    campaign_id   text NOT NULL REFERENCES campaigns(id),
    contact_id    text NOT NULL REFERENCES contacts(id),
    run_id        text NOT NULL,
    angle         text NOT NULL,
    tier          text NOT NULL,
    steps         integer NOT NULL CHECK (steps >= 1),
    step          integer NOT NULL DEFAULT 1 CHECK (step BETWEEN 1 AND steps),
    status        text NOT NULL DEFAULT 'active'
                  CHECK (status IN ('active', 'completed', 'stopped')),
    stop_reason   text,
    approved_by   text,
    next_due_at   timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, campaign_id, contact_id)
);
CREATE INDEX sequence_enrollments_contact ON sequence_enrollments (org_id, contact_id);
ALTER TABLE outbox ADD COLUMN sequence_step integer NOT NULL DEFAULT 1 CHECK (sequence_step >= 1);
ALTER TABLE contacts ADD COLUMN timezone text;
ALTER TABLE audit_log DROP CONSTRAINT audit_log_channel_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_channel_check
    CHECK (channel IN ('ui', 'link', 'chat-confirmed', 'system', 'sequence'));
ALTER TABLE org_settings ADD COLUMN sequence_approval text NOT NULL DEFAULT 'each_step'
    CHECK (sequence_approval IN ('each_step', 'once'));
