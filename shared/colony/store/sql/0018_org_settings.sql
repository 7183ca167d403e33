CREATE TABLE org_settings (
    org_id                 text PRIMARY KEY REFERENCES organizations(id),
    competitors            jsonb NOT NULL DEFAULT '[]'::jsonb
                           CHECK (jsonb_typeof(competitors) = 'array'),
    daily_send_cap         integer NOT NULL DEFAULT 200
                           CHECK (daily_send_cap BETWEEN 0 AND 100000),
    per_domain_hourly_cap  integer NOT NULL DEFAULT 5
                           CHECK (per_domain_hourly_cap BETWEEN 0 AND 100000),
    updated_at             timestamptz NOT NULL DEFAULT now(),
    CHECK (per_domain_hourly_cap <= daily_send_cap)
);
ALTER TABLE sequences ADD COLUMN channel text NOT NULL DEFAULT 'email'
    CHECK (channel IN ('email', 'linkedin', 'call'));
ALTER TABLE sequences ADD COLUMN name text NOT NULL DEFAULT '';
