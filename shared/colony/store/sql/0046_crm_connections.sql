-- Migration 0046 (issue 36): the team's CRM. Never edit once shipped: append a new migration.
--
-- crm_connections: one CRM account (a HubSpot portal) per org and provider. The row keeps
-- the Secret Manager name of its tokens (never a token), when the access token expires (it
-- is refreshed before then), and its state: 'connected', 'paused' (the CRM refused the
-- token: nothing is read or written until an admin reconnects; ``paused_reason`` says why)
-- or 'disconnected' (an admin disconnected it; its tokens were revoked and deleted). That a
-- portal is one org's is kept in resource_claims (kind 'hubspot_portal', migration 0039).
CREATE TABLE crm_connections (
    org_id            text NOT NULL REFERENCES organizations(id),
    provider          text NOT NULL CHECK (provider IN ('hubspot')),
    account_id        text NOT NULL CHECK (length(account_id) BETWEEN 1 AND 64),
    status            text NOT NULL CHECK (status IN ('connected', 'paused', 'disconnected')),
    secret_name       text NOT NULL,
    scopes            jsonb NOT NULL DEFAULT '[]'::jsonb,
    access_expires_at timestamptz,
    paused_reason     text,
    connected_by      text NOT NULL,
    connected_at      timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, provider)
);
-- An OAuth flow in progress: the SHA-256 of its ``state`` (the state itself is in the
-- person's browser only), bound to the org and the person who began it, spent by the
-- callback (deleted), refused once it expires.
CREATE TABLE crm_oauth_states (
    org_id      text NOT NULL REFERENCES organizations(id),
    state_hash  text NOT NULL CHECK (length(state_hash) = 64),
    provider    text NOT NULL CHECK (provider IN ('hubspot')),
    user_id     text NOT NULL,
    expires_at  timestamptz NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, state_hash)
);
-- What was written to the CRM under our idempotency key (an engagement logged for a sent
-- message, a reply, a call summary): a retried task finds the key and writes nothing again.
CREATE TABLE crm_writes (
    org_id          text NOT NULL REFERENCES organizations(id),
    provider        text NOT NULL CHECK (provider IN ('hubspot')),
    idempotency_key text NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 200),
    kind            text NOT NULL,
    remote_id       text NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, provider, idempotency_key)
);
