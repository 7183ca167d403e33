-- Migration 0057 (issue 39 item 4): deliverability that protects the sender. Never edit once
-- shipped: append a new migration.
--
-- outbox: how a message was refused, as codes only (a server's reply text can quote the
-- recipient): the SMTP reply code, the enhanced status code (RFC 3463), its class and name
-- (colony.policy.bounces); how many times it was refused for now and when that began (an
-- address whose messages keep being refused for now is suppressed); and the From address it
-- left from, so bounce and complaint rates are kept per sending mailbox and per sending
-- domain in PostgreSQL, the same for every instance.
ALTER TABLE outbox
    ADD COLUMN bounce_smtp integer CHECK (bounce_smtp BETWEEN 200 AND 599),
    ADD COLUMN bounce_status text CHECK (bounce_status ~ '^[245]\.[0-9]{1,3}\.[0-9]{1,3}$'),
    ADD COLUMN bounce_class text CHECK (bounce_class IN ('permanent', 'transient')),
    ADD COLUMN bounce_label text CHECK (length(bounce_label) <= 40),
    ADD COLUMN soft_bounces integer NOT NULL DEFAULT 0 CHECK (soft_bounces >= 0),
    ADD COLUMN first_soft_bounce_at timestamptz,
    ADD COLUMN sender_address text CHECK (length(sender_address) <= 320);
CREATE INDEX outbox_mailbox_rates ON outbox (org_id, sender_address, updated_at)
    WHERE sender_address IS NOT NULL;
CREATE INDEX outbox_domain_rates ON outbox (org_id, split_part(sender_address, '@', 2), updated_at)
    WHERE sender_address IS NOT NULL;
CREATE INDEX outbox_soft_bounces ON outbox (org_id, to_address)
    WHERE first_soft_bounce_at IS NOT NULL;

-- A campaign the breaker paused says why, and stays paused until a person resumes it (the
-- automatic resume after 24 hours is gone): who resumed it, and when, are kept.
ALTER TABLE campaigns
    ADD COLUMN pause_reason text CHECK (length(pause_reason) <= 300),
    ADD COLUMN resumed_by text CHECK (length(resumed_by) <= 128);

-- The breaker per sender: a sending mailbox (its address) or a sending domain whose bounce or
-- complaint rate over the window crossed its threshold. Paused, its mail waits (deferred,
-- never dropped) until a person resumes it; one row per sender, re-used by a later trip.
CREATE TABLE sender_pauses (
    org_id          text NOT NULL REFERENCES organizations(id),
    scope           text NOT NULL CHECK (scope IN ('mailbox', 'domain')),
    sender          text NOT NULL CHECK (length(sender) BETWEEN 1 AND 320),
    status          text NOT NULL CHECK (status IN ('paused', 'resumed')),
    reason          text NOT NULL CHECK (length(reason) <= 300),
    judged          integer NOT NULL CHECK (judged >= 0),
    bounce_rate     numeric(6, 5) NOT NULL,
    complaint_rate  numeric(6, 5) NOT NULL,
    paused_at       timestamptz NOT NULL,
    resumed_at      timestamptz,
    resumed_by      text CHECK (length(resumed_by) <= 128),
    PRIMARY KEY (org_id, scope, sender),
    CHECK ((status = 'resumed') = (resumed_at IS NOT NULL))
);

-- The org's postal address, printed in the footer of every message it sends (CAN-SPAM asks
-- for one); an org without one cannot launch a campaign nor approve a message to send.
ALTER TABLE org_settings ADD COLUMN postal_address text
    CHECK (postal_address IS NULL OR length(postal_address) BETWEEN 10 AND 300);

-- A sender the breaker pauses is told to the people who want breaker notifications, as a
-- paused campaign is (0054's colony_notify_event): once per pause.
CREATE FUNCTION colony_notify_sender_pause() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM colony_notify_event(
        NEW.org_id, 'breaker',
        NEW.scope || ':' || NEW.sender || '@' || extract(epoch FROM NEW.paused_at)::bigint,
        'Sending from ' || NEW.sender || ' paused by the circuit breaker',
        '/overview#alerts', NULL, NULL);
    RETURN NULL;
END
$$;
CREATE TRIGGER sender_pauses_notify AFTER INSERT OR UPDATE OF status, paused_at ON sender_pauses
    FOR EACH ROW WHEN (NEW.status = 'paused')
    EXECUTE FUNCTION colony_notify_sender_pause();
