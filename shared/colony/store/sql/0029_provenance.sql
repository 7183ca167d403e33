-- Issue 19 item 5: provenance. Each model call keeps what its context was built from
-- (colony.context.provenance: chunk ids with similarity and content hash, entity ids with
-- updated_at, the brief, the history turns, the template version, the budget cuts) under
-- the call id its repair and retries share; an approval item names the call that drafted it.
ALTER TABLE llm_calls
    ADD COLUMN call_id text CHECK (call_id <> ''),
    ADD COLUMN provenance jsonb NOT NULL DEFAULT '{}'::jsonb;
CREATE INDEX llm_calls_by_call ON llm_calls (org_id, call_id) WHERE call_id IS NOT NULL;
CREATE INDEX llm_calls_by_run ON llm_calls (org_id, run_id);
ALTER TABLE approval_items ADD COLUMN llm_call_id text CHECK (llm_call_id <> '');

-- An outcome (delivered, replied, bounced, ...) credited to each chunk that grounded the
-- call: the content hash is kept, so the credit stays readable after the chunk is edited
-- (no foreign key to kc_chunks: an edit replaces the chunk, the credit stays).
CREATE TABLE kc_chunk_credits (
    org_id        text NOT NULL REFERENCES organizations(id),
    call_id       text NOT NULL CHECK (call_id <> ''),
    chunk_id      bigint NOT NULL,
    content_hash  text NOT NULL,
    domain        text NOT NULL CHECK (domain ~ '^KC-(0[1-9]|10)$'),
    outcome       text NOT NULL CHECK (outcome ~ '^[a-z][a-z_]{0,39}$'),
    credited_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, call_id, chunk_id, outcome)
);
CREATE INDEX kc_chunk_credits_by_chunk ON kc_chunk_credits (org_id, chunk_id);
