-- Migration 0055 (issue 36, out): what Colony writes to an org's CRM, and what became of it.
-- Never edit once shipped: append a new migration.
--
-- crm_pushes: one row per thing a person's act or a confirmed event sends to the CRM: an
-- approved deal update (kind 'deal_update', source = the approval item), a sent message
-- ('email', the outbox row), a reply received ('reply', the reply row), a call's summary
-- ('call', the recording). Unique per source, so a re-applied approval or a redelivered
-- event makes one row and one task. ``status`` is what became of it:
--   queued         its task is on the CRM queue
--   waiting        the org's connection is paused: queued again when an admin reconnects
--   written        in the CRM (``remote_id``: the deal, or the engagement it logged)
--   conflict       HubSpot changed a field since the card read it: nothing written; the
--                  'crm_conflict' approval item (``conflict_item_id``) shows both values
--   unlinked       our deal or contact has no CRM record linked: nothing to write to
--   not_connected  the org has no CRM connection (or disconnected it): nothing written
--   unmapped       a stage no mapping names: nothing written, a person maps it
--   refused        the CRM refused it as invalid (``outcome`` says what it said)
-- ``outcome`` is our words (never a prospect's text, a token or a CRM body).
CREATE TABLE crm_pushes (
    org_id           text NOT NULL REFERENCES organizations(id),
    id               text NOT NULL DEFAULT gen_random_uuid()::text,
    provider         text NOT NULL CHECK (provider IN ('hubspot')),
    kind             text NOT NULL CHECK (kind IN ('deal_update', 'email', 'reply', 'call')),
    source_id        text NOT NULL CHECK (length(source_id) BETWEEN 1 AND 200),
    status           text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'waiting',
                         'written', 'conflict', 'unlinked', 'not_connected', 'unmapped',
                         'refused')),
    outcome          text CHECK (outcome IS NULL OR length(outcome) <= 500),
    remote_id        text,
    conflict_item_id text,
    attempts         integer NOT NULL DEFAULT 0,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, id),
    UNIQUE (org_id, provider, kind, source_id)
);
-- A reconnect queues the org's waiting pushes again.
CREATE INDEX crm_pushes_waiting ON crm_pushes (org_id, provider) WHERE status = 'waiting';

-- crm_stage_map: our deal stage → the CRM's pipeline and stage, per org. The editable
-- mapping of the inbound sync (issue 36 item 2) is built beside this; until they meet,
-- write-back reads the org's mapping from here (``colony.store.crm.stages``).
CREATE TABLE crm_stage_map (
    org_id      text NOT NULL REFERENCES organizations(id),
    provider    text NOT NULL CHECK (provider IN ('hubspot')),
    stage       text NOT NULL CHECK (stage IN ('discovery', 'demo', 'proposal', 'negotiation',
                                               'closed_won', 'closed_lost')),
    pipeline_id text NOT NULL CHECK (length(pipeline_id) BETWEEN 1 AND 64),
    stage_id    text NOT NULL CHECK (length(stage_id) BETWEEN 1 AND 64),
    PRIMARY KEY (org_id, provider, stage)
);

-- A conflict is a card of its own: HubSpot's value and ours, for a person to choose.
ALTER TABLE approval_items DROP CONSTRAINT approval_items_kind_check;
ALTER TABLE approval_items ADD CONSTRAINT approval_items_kind_check CHECK (
    kind IN ('outbound_message', 'deal_update', 'kc_update_candidate', 'content_piece',
             'follow_up', 'deployment_kit', 'tool_action', 'missing_data', 'sequence_task',
             'crm_conflict')
) NOT VALID;
ALTER TABLE approval_items VALIDATE CONSTRAINT approval_items_kind_check;

-- Each org sees only its own rows (as every org-scoped table: ``migrations._rls``).
ALTER TABLE crm_pushes ENABLE ROW LEVEL SECURITY;
ALTER TABLE crm_pushes FORCE ROW LEVEL SECURITY;
CREATE POLICY org_isolation ON crm_pushes
    USING (org_id = current_setting('app.org_id', true))
    WITH CHECK (org_id = current_setting('app.org_id', true));
ALTER TABLE crm_stage_map ENABLE ROW LEVEL SECURITY;
ALTER TABLE crm_stage_map FORCE ROW LEVEL SECURITY;
CREATE POLICY org_isolation ON crm_stage_map
    USING (org_id = current_setting('app.org_id', true))
    WITH CHECK (org_id = current_setting('app.org_id', true));
