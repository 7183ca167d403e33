CREATE TABLE kc_chunks (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    org_id           text NOT NULL REFERENCES organizations(id),
    domain           text NOT NULL CHECK (domain ~ '^KC-(0[1-9]|10)$'),
    source           text NOT NULL CHECK (source IN ('notion', 'approval', 'seed')),
    source_id        text NOT NULL CHECK (source_id <> ''),
    chunk_index      integer NOT NULL CHECK (chunk_index >= 0),
    title            text,
    content          text NOT NULL CHECK (content <> ''),
    content_hash     text NOT NULL,
    tags             jsonb NOT NULL DEFAULT '{{}}',
    embedding_model  text NOT NULL,
    embedding        vector({dim}) NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (org_id, source, source_id, chunk_index)
);
CREATE INDEX kc_chunks_org_domain ON kc_chunks (org_id, domain);
{hnsw}
