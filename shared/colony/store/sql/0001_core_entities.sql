CREATE EXTENSION IF NOT EXISTS vector;

-- ENT-001 organization (Clerk org id)
CREATE TABLE organizations (
    id          text PRIMARY KEY CHECK (id <> ''),
    name        text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- ENT-010 ICP definition: rubric and anti-ICP rules, one active version per org
CREATE TABLE icp_definitions (
    id              text PRIMARY KEY DEFAULT gen_random_uuid()::text,
    org_id          text NOT NULL REFERENCES organizations(id),
    version         integer NOT NULL DEFAULT 1,
    description     text NOT NULL,
    rubric          jsonb NOT NULL,
    anti_icp_rules  jsonb NOT NULL DEFAULT '[]',
    active          boolean NOT NULL DEFAULT true,
    created_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (org_id, version)
);
CREATE UNIQUE INDEX icp_definitions_one_active ON icp_definitions (org_id) WHERE active;

-- ENT-002 contact / prospect
CREATE TABLE contacts (
    id                 text PRIMARY KEY DEFAULT gen_random_uuid()::text,
    org_id             text NOT NULL REFERENCES organizations(id),
    external_id        text,
    name               text NOT NULL,
    title              text,
    email              text,
    company            text NOT NULL,
    company_domain     text,
    enrichment         jsonb NOT NULL DEFAULT '{}',
    raw_enrichment_html text,
    signals            jsonb NOT NULL DEFAULT '[]',
    icp_score          integer CHECK (icp_score BETWEEN 0 AND 100),
    icp_disqualifiers  jsonb NOT NULL DEFAULT '[]',
    icp_recommendation text CHECK (icp_recommendation IN ('qualify', 'hold', 'disqualify')),
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    UNIQUE (org_id, external_id)
);
CREATE INDEX contacts_org ON contacts (org_id);

-- ENT-003 deal
CREATE TABLE deals (
    id           text PRIMARY KEY DEFAULT gen_random_uuid()::text,
    org_id       text NOT NULL REFERENCES organizations(id),
    external_id  text,
    contact_id   text REFERENCES contacts(id),
    name         text NOT NULL,
    stage        text NOT NULL,
    value        numeric(14, 2),
    next_action  text,
    close_date   date,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (org_id, external_id)
);
CREATE INDEX deals_org_stage ON deals (org_id, stage);

-- ENT-004 sequence library: angle × tier × step
CREATE TABLE sequences (
    id               text PRIMARY KEY DEFAULT gen_random_uuid()::text,
    org_id           text NOT NULL REFERENCES organizations(id),
    angle            text NOT NULL
                     CHECK (angle IN ('Signal', 'Pain', 'Referral', 'PatternBreak', 'Insight')),
    tier             text NOT NULL CHECK (tier IN ('T1', 'T2', 'T3', 'T4', 'T5')),
    step             integer NOT NULL CHECK (step >= 1),
    delay_days       integer NOT NULL DEFAULT 0,
    guidance         text NOT NULL,
    UNIQUE (org_id, angle, tier, step)
);

-- ENT-005 campaign, its contacts, its runs and their durable steps
CREATE TABLE campaigns (
    id                   text PRIMARY KEY DEFAULT gen_random_uuid()::text,
    org_id               text NOT NULL REFERENCES organizations(id),
    name                 text NOT NULL,
    angle                text NOT NULL
                         CHECK (angle IN ('Signal', 'Pain', 'Referral', 'PatternBreak', 'Insight')),
    tier                 text NOT NULL CHECK (tier IN ('T1', 'T2', 'T3', 'T4', 'T5')),
    status               text NOT NULL DEFAULT 'draft'
                         CHECK (status IN ('draft', 'active', 'paused', 'completed')),
    bounce_threshold     numeric(5, 4) NOT NULL DEFAULT 0.05,
    complaint_threshold  numeric(5, 4) NOT NULL DEFAULT 0.003,
    created_at           timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE campaign_contacts (
    org_id       text NOT NULL REFERENCES organizations(id),
    campaign_id  text NOT NULL REFERENCES campaigns(id),
    contact_id   text NOT NULL REFERENCES contacts(id),
    PRIMARY KEY (campaign_id, contact_id)
);

CREATE TABLE campaign_runs (
    id            text PRIMARY KEY DEFAULT gen_random_uuid()::text,
    org_id        text NOT NULL REFERENCES organizations(id),
    campaign_id   text NOT NULL REFERENCES campaigns(id),
    status        text NOT NULL DEFAULT 'running'
                  CHECK (status IN ('running', 'paused', 'completed', 'failed')),
    paused_reason text,
    contacts_total integer NOT NULL DEFAULT 0,
    contacts_done  integer NOT NULL DEFAULT 0,
    started_at    timestamptz NOT NULL DEFAULT now(),
    finished_at   timestamptz
);

CREATE TABLE run_steps (
    org_id      text NOT NULL REFERENCES organizations(id),
    run_id      text NOT NULL,
    step_key    text NOT NULL,
    output      jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, step_key)
);

-- ENT-006 recording: transcript in GCS, signals and summary here
CREATE TABLE recordings (
    id              text PRIMARY KEY DEFAULT gen_random_uuid()::text,
    org_id          text NOT NULL REFERENCES organizations(id),
    deal_id         text REFERENCES deals(id),
    source_file_id  text,
    title           text NOT NULL,
    transcript_uri  text,
    status          text NOT NULL DEFAULT 'received'
                    CHECK (status IN ('received', 'processing', 'processed', 'failed')),
    signals         jsonb NOT NULL DEFAULT '[]',
    summary         text,
    error           text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (org_id, source_file_id)
);

-- ENT-008 chat sessions and their turns (role 'summary' replaces compacted turns)
CREATE TABLE chat_sessions (
    id          text PRIMARY KEY DEFAULT gen_random_uuid()::text,
    org_id      text NOT NULL REFERENCES organizations(id),
    user_id     text,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE chat_turns (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    org_id       text NOT NULL REFERENCES organizations(id),
    session_id   text NOT NULL REFERENCES chat_sessions(id),
    role         text NOT NULL CHECK (role IN ('user', 'assistant', 'tool', 'system', 'summary')),
    content      text NOT NULL,
    tool_call    jsonb,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX chat_turns_session ON chat_turns (session_id, id);

-- ENT-009 daily brief, one per org and day
CREATE TABLE daily_briefs (
    id             text PRIMARY KEY DEFAULT gen_random_uuid()::text,
    org_id         text NOT NULL REFERENCES organizations(id),
    brief_date     date NOT NULL,
    content        text NOT NULL,
    sections       jsonb NOT NULL DEFAULT '{}',
    data_snapshot  jsonb NOT NULL DEFAULT '{}',
    created_at     timestamptz NOT NULL DEFAULT now(),
    UNIQUE (org_id, brief_date)
);

-- ENT-011 approval queue (CONST-001: nothing LLM-made leaves without an approved item)
CREATE TABLE approval_items (
    id            text PRIMARY KEY DEFAULT gen_random_uuid()::text,
    org_id        text NOT NULL REFERENCES organizations(id),
    kind          text NOT NULL CHECK (kind IN ('outbound_message', 'deal_update',
                                               'kc_update_candidate', 'content_piece',
                                               'follow_up', 'deployment_kit', 'tool_action')),
    status        text NOT NULL DEFAULT 'pending'
                  CHECK (status IN ('pending', 'approved', 'rejected', 'applied')),
    source_agent  text NOT NULL,
    run_id        text,
    subject_id    text,
    payload       jsonb NOT NULL,
    edited_payload jsonb,
    decided_by    text,
    decided_at    timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX approval_items_pending ON approval_items (org_id, created_at) WHERE status = 'pending';

-- ENT-012 outbox: approved messages, their delivery events
CREATE TABLE outbox (
    id                text PRIMARY KEY DEFAULT gen_random_uuid()::text,
    org_id            text NOT NULL REFERENCES organizations(id),
    approval_item_id  text NOT NULL UNIQUE REFERENCES approval_items(id),
    campaign_id       text REFERENCES campaigns(id),
    contact_id        text REFERENCES contacts(id),
    subject           text NOT NULL,
    body              text NOT NULL,
    status            text NOT NULL DEFAULT 'queued'
                      CHECK (status IN ('queued', 'sent', 'delivered', 'bounced',
                                        'complained', 'replied', 'blocked')),
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now()
);

-- Idempotent delivery: an event id is recorded in the same transaction as its effects
CREATE TABLE processed_events (
    org_id        text NOT NULL REFERENCES organizations(id),
    handler       text NOT NULL,
    event_id      text NOT NULL,
    outcome       text NOT NULL DEFAULT 'done' CHECK (outcome IN ('done', 'rejected')),
    detail        text,
    processed_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, handler, event_id)
);

-- SPEC §7: the trace metadata of every LLM call, analysable without Langfuse
CREATE TABLE llm_calls (
    id                   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    org_id               text NOT NULL REFERENCES organizations(id),
    agent_id             text NOT NULL,
    run_id               text,
    model                text NOT NULL,
    kc_domains_queried   text[] NOT NULL DEFAULT '{}',
    tokens_in            integer NOT NULL,
    tokens_out           integer NOT NULL,
    context_budget_used  jsonb NOT NULL DEFAULT '{}',
    latency_ms           double precision,
    created_at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX llm_calls_org_agent ON llm_calls (org_id, agent_id, created_at);
