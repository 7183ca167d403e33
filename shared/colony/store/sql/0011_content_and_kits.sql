CREATE TABLE published_content (
    id                text PRIMARY KEY DEFAULT gen_random_uuid()::text,
    org_id            text NOT NULL REFERENCES organizations(id),
    approval_item_id  text NOT NULL UNIQUE REFERENCES approval_items(id),
    title             text NOT NULL,
    format            text NOT NULL,
    body              text NOT NULL,
    published_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX published_content_org_time ON published_content (org_id, published_at);
CREATE TABLE deployment_kits (
    id                text PRIMARY KEY DEFAULT gen_random_uuid()::text,
    org_id            text NOT NULL REFERENCES organizations(id),
    deal_id           text NOT NULL REFERENCES deals(id),
    approval_item_id  text NOT NULL UNIQUE REFERENCES approval_items(id),
    title             text NOT NULL,
    object_name       text NOT NULL,
    gcs_uri           text NOT NULL,
    status            text NOT NULL DEFAULT 'pending'
                      CHECK (status IN ('pending', 'released')),
    released_at       timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    UNIQUE (org_id, deal_id)
);
