-- Migration 0050 (issue 35): the people of an org. Never edit once shipped: append a new
-- migration.
--
-- org_members: one row per Clerk user of an org (kept from Clerk's membership events or its
-- API), with their role and the address a notification or digest goes to. A person who
-- leaves stays as 'left' (``left_at``), so what they owned can be handed on and the audit
-- log still names them; nothing is routed to them any more.
CREATE TABLE org_members (
    org_id     text NOT NULL REFERENCES organizations(id),
    user_id    text NOT NULL CHECK (length(user_id) BETWEEN 1 AND 128),
    role       text NOT NULL CHECK (length(role) BETWEEN 1 AND 64),
    email      text CHECK (email IS NULL OR length(email) BETWEEN 3 AND 320),
    name       text NOT NULL DEFAULT '' CHECK (length(name) <= 256),
    status     text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'left')),
    joined_at  timestamptz NOT NULL DEFAULT now(),
    left_at    timestamptz,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, user_id),
    CHECK ((status = 'left') = (left_at IS NOT NULL))
);
