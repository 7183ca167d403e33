-- Migration 0052 (issue 39 item 2): an org's sender mailboxes. Never edit once shipped:
-- append a new migration.
--
-- sender_mailboxes: the addresses an org's mail goes from, each on one of its sending
-- domains (the foreign key; the flow also asks that the domain be verified), with the name
-- its recipients see, its daily limit and a warm-up ramp (from ``warmup_first`` a day on
-- ``warmup_start`` up to ``daily_limit`` after ``warmup_days``; colony.policy.mailboxes).
-- ``kind`` is how mail leaves it: 'provider' (the deployment's relay or Resend, DKIM-signed
-- with the domain's key), 'gmail' (the org's Google Workspace mailbox through the Gmail API)
-- or 'graph' (Microsoft 365 through Graph). The API kinds hold an OAuth grant: its tokens
-- are in the secret store (``grant_secret`` names them, a new name per connection), its
-- account is the mailbox's own address (proven at the callback), and ``grant_status`` says
-- whether mail can go: 'none' (never connected), 'connected', 'revoked' (the provider
-- refused the grant: its mail waits until an admin connects it again; ``grant_reason``).
CREATE TABLE sender_mailboxes (
    org_id           text NOT NULL REFERENCES organizations(id),
    id               text NOT NULL DEFAULT gen_random_uuid()::text,
    address          text NOT NULL
                     CHECK (address = lower(address) AND length(address) BETWEEN 3 AND 320),
    domain           text NOT NULL,
    display_name     text NOT NULL CHECK (length(display_name) BETWEEN 1 AND 120),
    kind             text NOT NULL CHECK (kind IN ('provider', 'gmail', 'graph')),
    daily_limit      integer NOT NULL CHECK (daily_limit BETWEEN 1 AND 5000),
    warmup_start     date,
    warmup_days      integer NOT NULL DEFAULT 0 CHECK (warmup_days BETWEEN 0 AND 180),
    warmup_first     integer NOT NULL DEFAULT 10 CHECK (warmup_first BETWEEN 1 AND 5000),
    -- active: takes new contacts and sends; paused: an admin paused it (its contacts' mail
    -- waits, new contacts go to the others)
    status           text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'paused')),
    grant_status     text NOT NULL DEFAULT 'none'
                     CHECK (grant_status IN ('none', 'connected', 'revoked')),
    grant_secret     text CHECK (grant_secret IS NULL OR grant_secret ~ '^[A-Za-z0-9_-]{1,255}$'),
    grant_reason     text CHECK (grant_reason IS NULL OR length(grant_reason) <= 300),
    grant_expires_at timestamptz,
    created_by       text NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, id),
    UNIQUE (org_id, address),
    FOREIGN KEY (org_id, domain) REFERENCES sending_domains (org_id, domain),
    CHECK (split_part(address, '@', 2) = domain),
    CHECK (kind <> 'provider' OR grant_status = 'none'),
    CHECK ((grant_status = 'connected') = (grant_secret IS NOT NULL))
);

-- A mailbox's OAuth flow in progress: the SHA-256 of its ``state``, bound to the org, the
-- mailbox and the person who began it; spent by the callback (deleted), refused once expired.
CREATE TABLE mailbox_oauth_states (
    org_id      text NOT NULL REFERENCES organizations(id),
    state_hash  text NOT NULL CHECK (length(state_hash) = 64),
    mailbox_id  text NOT NULL,
    user_id     text NOT NULL,
    expires_at  timestamptz NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, state_hash),
    FOREIGN KEY (org_id, mailbox_id) REFERENCES sender_mailboxes (org_id, id) ON DELETE CASCADE
);

-- Which mailbox a message goes from (fixed at its first send attempt; a contact's later
-- steps take the mailbox of its first), the UTC day it counts against that mailbox's limit
-- (cleared when a cap defers it), Gmail's thread of the message (a follow-up is sent into
-- it), and why it waits when it does (shown on its card: a revoked grant, a paused domain).
ALTER TABLE outbox ADD COLUMN mailbox_id text;
ALTER TABLE outbox ADD COLUMN send_day date;
ALTER TABLE outbox ADD COLUMN provider_thread text
    CHECK (provider_thread IS NULL OR length(provider_thread) <= 200);
ALTER TABLE outbox ADD COLUMN wait_reason text
    CHECK (wait_reason IS NULL OR length(wait_reason) <= 300);
ALTER TABLE outbox ADD CONSTRAINT outbox_mailbox_fk
    FOREIGN KEY (org_id, mailbox_id) REFERENCES sender_mailboxes (org_id, id);
CREATE INDEX outbox_mailbox_day ON outbox (org_id, mailbox_id, send_day)
    WHERE mailbox_id IS NOT NULL;
