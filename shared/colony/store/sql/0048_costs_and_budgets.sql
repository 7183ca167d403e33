-- Migration 0048 (issue 38 item 2): what each org spends, its budget, and the campaign work
-- that waits while the budget is spent (docs/costs.md). Never edit once shipped: append a
-- new migration.

-- Each model call's record gains the part of its prompt the provider's cache served, what it
-- cost in USD (priced as the row is written from the price table, colony.registry.prices;
-- NULL when the table has no price for the model: unknown, never 0) and the campaign it was
-- for: the campaign of the campaign run its run_id names, looked up as the row is written
-- (colony.store.llm_calls), NULL for a call made for no campaign run.
ALTER TABLE llm_calls
    ADD COLUMN tokens_cached integer NOT NULL DEFAULT 0 CHECK (tokens_cached >= 0),
    ADD COLUMN cost_usd      numeric(20, 12) CHECK (cost_usd >= 0),
    ADD COLUMN campaign_id   text;

-- An org's spend per UTC day, agent, campaign and model, added to by the trigger below as
-- each llm_calls row is written (whichever statement writes it), so the month's totals and
-- the budget's standing are a read of at most a few hundred rows, and outlive the calls
-- themselves (an org may keep llm_calls for a few days only: colony.flows.tenants.retention).
-- cost_usd sums the priced calls; unpriced_calls counts the others.
CREATE TABLE llm_usage_daily (
    org_id         text NOT NULL REFERENCES organizations(id),
    id             bigint GENERATED ALWAYS AS IDENTITY,
    day            date NOT NULL,
    agent_id       text NOT NULL,
    campaign_id    text,
    model          text NOT NULL,
    calls          integer NOT NULL DEFAULT 0,
    unpriced_calls integer NOT NULL DEFAULT 0,
    tokens_in      bigint NOT NULL DEFAULT 0,
    tokens_cached  bigint NOT NULL DEFAULT 0,
    tokens_out     bigint NOT NULL DEFAULT 0,
    cost_usd       numeric(24, 12) NOT NULL DEFAULT 0,
    PRIMARY KEY (org_id, id),
    CONSTRAINT llm_usage_daily_key
        UNIQUE NULLS NOT DISTINCT (org_id, day, agent_id, campaign_id, model)
);

-- An org's monthly budget (NULL: none): an alert once the month's spend reaches
-- budget_alert_share of it, and with budget_hard_cap, no new campaign work once it reaches
-- the whole (colony.flows.tenants.budget).
ALTER TABLE org_settings
    ADD COLUMN budget_monthly_usd numeric(12, 2) CHECK (budget_monthly_usd > 0),
    ADD COLUMN budget_alert_share numeric(4, 3) NOT NULL DEFAULT 0.8
        CHECK (budget_alert_share > 0 AND budget_alert_share <= 1),
    ADD COLUMN budget_hard_cap boolean NOT NULL DEFAULT true;

-- Each budget alert, once per org, month and kind ('soft': the alert share reached;
-- 'reached': the whole budget), with the figures it was raised on. There is no notification
-- system yet (issue 35 builds it): an alert is kept here until one delivers it and sets
-- delivered_at; /overview's banner and `colony org usage` show the standing meanwhile.
CREATE TABLE budget_alerts (
    org_id       text NOT NULL REFERENCES organizations(id),
    id           bigint GENERATED ALWAYS AS IDENTITY,
    month        date NOT NULL CHECK (extract(day FROM month) = 1),
    kind         text NOT NULL CHECK (kind IN ('soft', 'reached')),
    spent_usd    numeric(24, 12) NOT NULL,
    budget_usd   numeric(12, 2) NOT NULL,
    alert_share  numeric(4, 3) NOT NULL,
    hard_cap     boolean NOT NULL,  -- whether campaign work paused when it was reached
    raised_at    timestamptz NOT NULL DEFAULT now(),
    delivered_at timestamptz,
    PRIMARY KEY (org_id, id),
    UNIQUE (org_id, month, kind)
);
CREATE INDEX budget_alerts_undelivered ON budget_alerts (org_id, id) WHERE delivered_at IS NULL;

-- Campaign work held while the org's budget is spent and capped: the handoff (or sequence
-- step) that would have started the durable step ``step_key`` of ``run_id``, kept as it was
-- delivered with the topic it came on, and published again when the budget allows
-- (colony.flows.tenants.budget.release). One row per step: a redelivered event holds once.
CREATE TABLE budget_holds (
    org_id      text NOT NULL REFERENCES organizations(id),
    id          bigint GENERATED ALWAYS AS IDENTITY,
    run_id      text NOT NULL,
    step_key    text NOT NULL,
    campaign_id text NOT NULL,
    topic       text NOT NULL,
    event       jsonb NOT NULL,
    held_at     timestamptz NOT NULL DEFAULT now(),
    released_at timestamptz,
    PRIMARY KEY (org_id, id),
    UNIQUE (org_id, run_id, step_key)
);
CREATE INDEX budget_holds_waiting ON budget_holds (org_id, id) WHERE released_at IS NULL;

-- Counts one llm_calls row into its day's totals and, when the org has a budget, records the
-- month's alerts its spend has reached. A trigger, so both ways a call is recorded (its own
-- transaction, or inside a chat turn's one statement: colony.store.chat_events) count it in
-- the same transaction with no extra round trip. It runs as the caller, under the row's org
-- (row-level security holds): it sees and writes that org's rows only.
CREATE FUNCTION colony_count_llm_call() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    month_start date := date_trunc('month', NEW.created_at AT TIME ZONE 'UTC')::date;
    budget numeric;
    share numeric;
    capped boolean;
    spent numeric;
BEGIN
    INSERT INTO llm_usage_daily AS u (org_id, day, agent_id, campaign_id, model, calls,
                                      unpriced_calls, tokens_in, tokens_cached, tokens_out,
                                      cost_usd)
    VALUES (NEW.org_id, (NEW.created_at AT TIME ZONE 'UTC')::date, NEW.agent_id,
            NEW.campaign_id, NEW.model, 1, CASE WHEN NEW.cost_usd IS NULL THEN 1 ELSE 0 END,
            NEW.tokens_in, NEW.tokens_cached, NEW.tokens_out, coalesce(NEW.cost_usd, 0))
    ON CONFLICT ON CONSTRAINT llm_usage_daily_key DO UPDATE SET
        calls = u.calls + 1,
        unpriced_calls = u.unpriced_calls + EXCLUDED.unpriced_calls,
        tokens_in = u.tokens_in + EXCLUDED.tokens_in,
        tokens_cached = u.tokens_cached + EXCLUDED.tokens_cached,
        tokens_out = u.tokens_out + EXCLUDED.tokens_out,
        cost_usd = u.cost_usd + EXCLUDED.cost_usd;
    SELECT s.budget_monthly_usd, s.budget_alert_share, s.budget_hard_cap
        INTO budget, share, capped
        FROM org_settings s WHERE s.org_id = NEW.org_id;
    IF budget IS NULL OR NEW.cost_usd IS NULL OR NEW.cost_usd = 0 OR (
        SELECT count(*) FROM budget_alerts a
        WHERE a.org_id = NEW.org_id AND a.month = month_start
    ) = 2 THEN
        RETURN NULL;  -- no budget, nothing spent, or both of the month's alerts raised already
    END IF;
    SELECT coalesce(sum(d.cost_usd), 0) INTO spent FROM llm_usage_daily d
        WHERE d.org_id = NEW.org_id AND d.day >= month_start
          AND d.day < (month_start + interval '1 month');
    IF spent >= budget * share THEN
        INSERT INTO budget_alerts (org_id, month, kind, spent_usd, budget_usd, alert_share,
                                   hard_cap)
        VALUES (NEW.org_id, month_start, 'soft', spent, budget, share, capped)
        ON CONFLICT (org_id, month, kind) DO NOTHING;
    END IF;
    IF spent >= budget THEN
        INSERT INTO budget_alerts (org_id, month, kind, spent_usd, budget_usd, alert_share,
                                   hard_cap)
        VALUES (NEW.org_id, month_start, 'reached', spent, budget, share, capped)
        ON CONFLICT (org_id, month, kind) DO NOTHING;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER llm_calls_count AFTER INSERT ON llm_calls
    FOR EACH ROW EXECUTE FUNCTION colony_count_llm_call();

-- The daily budget-release schedule serves only the orgs with held campaign work
-- (colony.registry.schedules): migration 0045's lister, with that audience added.
CREATE OR REPLACE FUNCTION colony_scheduled_orgs(serves text, after text, page integer)
RETURNS SETOF text
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_catalog AS $$
BEGIN
    IF serves NOT IN ('orgs', 'notion', 'drive', 'research', 'sending_domains', 'held') THEN
        RAISE EXCEPTION 'unknown schedule audience %', serves USING ERRCODE = '22023';
    END IF;
    RETURN QUERY
        SELECT o.id FROM organizations o
        WHERE o.id > coalesce(after, '')
          AND NOT EXISTS (SELECT 1 FROM erasure_jobs j WHERE j.target_org = o.id
                          AND j.contact_id IS NULL AND j.status = 'pending')
          AND (serves = 'orgs'
               OR (serves = 'notion' AND EXISTS (SELECT 1 FROM notion_workspaces w
                   WHERE w.org_id = o.id AND w.status = 'connected'))
               OR (serves = 'drive' AND EXISTS (SELECT 1 FROM drive_channels c
                   WHERE c.org_id = o.id AND c.status = 'active'))
               OR (serves = 'research' AND EXISTS (SELECT 1 FROM research_jobs r
                   WHERE r.org_id = o.id AND r.status = 'running'
                     AND (r.lease_until IS NULL OR r.lease_until < now())
                     AND r.touched_at < now() - interval '1800 seconds'))
               OR (serves = 'sending_domains' AND EXISTS (SELECT 1 FROM sending_domains d
                   WHERE d.org_id = o.id AND d.status IN ('verified', 'paused')))
               OR (serves = 'held' AND EXISTS (SELECT 1 FROM budget_holds h
                   WHERE h.org_id = o.id AND h.released_at IS NULL)))
        ORDER BY o.id
        LIMIT least(greatest(page, 1), 1000);
END
$$;
