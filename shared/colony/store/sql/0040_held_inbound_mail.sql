-- Migration 0040 (issue 31 item 4): inbound mail that arrives before the deployment can read
-- it. Resend's signed ``email.received`` event names a message but carries no body; without
-- a reader (no COLONY_RESEND_API_KEY) the webhook keeps the event here and answers 202, and
-- the replies-poll drains it once a reader exists (colony.flows.held_mail). Ids and times
-- only, never the mail: we have not read it. No org owns a row (the message names its org
-- only once it is read), so no row-level security, as for ``erasure_jobs``. Never edit once
-- shipped: append a new migration.
CREATE TABLE held_inbound_mail (
    event_id    text PRIMARY KEY CHECK (event_id <> ''),  -- the svix-id: a redelivery is one row
    email_id    text NOT NULL CHECK (email_id <> ''),     -- the provider's id of the message
    held_at     timestamptz NOT NULL,
    status      text NOT NULL DEFAULT 'held'
                CHECK (status IN ('held', 'ingested', 'rejected', 'missing', 'failed')),
    attempts    integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),  -- reads that failed for now
    detail      text,  -- the outcome or the last failure: an error code and ids, never mail
    settled_at  timestamptz,
    CHECK ((status = 'held') = (settled_at IS NULL))
);
-- the drain's queue: what still waits, oldest first
CREATE INDEX held_inbound_mail_waiting ON held_inbound_mail (held_at, event_id)
    WHERE status = 'held';
