-- Migration 0020 (issue 17 items 4-5): Notion workspaces, their sync runs, Drive channels;
-- why, in colony.store.migrations. Never edit once shipped: append a new migration.
CREATE TABLE notion_workspaces (
    workspace_id  text PRIMARY KEY CHECK (length(workspace_id) BETWEEN 1 AND 100),
    org_id        text NOT NULL REFERENCES organizations(id),
    secret_name   text NOT NULL,
    domains       jsonb NOT NULL CHECK (jsonb_typeof(domains) = 'object'),
    status        text NOT NULL DEFAULT 'connected'
                  CHECK (status IN ('connected', 'disconnected')),
    connected_at  timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX notion_workspaces_org ON notion_workspaces (org_id);
CREATE TABLE notion_syncs (
    id             text PRIMARY KEY,
    org_id         text NOT NULL REFERENCES organizations(id),
    workspace_id   text NOT NULL REFERENCES notion_workspaces(workspace_id) ON DELETE CASCADE,
    kind           text NOT NULL CHECK (kind IN ('backfill', 'reconcile')),
    targets        jsonb NOT NULL CHECK (jsonb_typeof(targets) = 'array'),
    position       integer NOT NULL DEFAULT 0,
    cursor         text,
    step           integer NOT NULL DEFAULT 0,
    status         text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'done')),
    pages_seen     integer NOT NULL DEFAULT 0,
    pages_synced   integer NOT NULL DEFAULT 0,
    pages_skipped  integer NOT NULL DEFAULT 0,
    rate_limited   integer NOT NULL DEFAULT 0,
    started_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    finished_at    timestamptz
);
CREATE INDEX notion_syncs_workspace ON notion_syncs (org_id, workspace_id, started_at);
CREATE TABLE drive_channels (
    id           text PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 64),
    org_id       text NOT NULL REFERENCES organizations(id),
    folder_id    text NOT NULL,
    resource_id  text NOT NULL,
    expires_at   timestamptz NOT NULL,
    status       text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'stopped')),
    created_at   timestamptz NOT NULL DEFAULT now(),
    stopped_at   timestamptz
);
CREATE INDEX drive_channels_org ON drive_channels (org_id, status, expires_at);
