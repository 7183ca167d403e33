-- Issue 16: kc_chunks partitioned by org, so a query's constant org_id prunes to one
-- partition at plan time and PostgreSQL opens only that partition's indexes. Small orgs
-- share the default partition (btree on (org_id, domain), answered by exact scans); an org
-- that outgrows it is moved online into a partition of its own with ten per-domain HNSW
-- graphs (colony.knowledge.tiering). The why and the measured figures: colony.knowledge.tiering.
-- ``{dim}`` is the configured embedding dimension. The old per-(org, domain) partial HNSW
-- indexes go with the old table: every org starts shared and is re-tiered by size.
ALTER TABLE kc_chunks NO FORCE ROW LEVEL SECURITY;
ALTER TABLE kc_chunks RENAME TO kc_chunks_0022;
CREATE SEQUENCE kc_chunk_ids;
CREATE TABLE kc_chunks (
    id               bigint NOT NULL DEFAULT nextval('kc_chunk_ids'),
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
    CONSTRAINT kc_chunks_pk PRIMARY KEY (org_id, id),
    CONSTRAINT kc_chunks_source_key UNIQUE (org_id, source, source_id, chunk_index)
) PARTITION BY LIST (org_id);
ALTER SEQUENCE kc_chunk_ids OWNED BY kc_chunks.id;
CREATE INDEX kc_chunks_by_domain ON kc_chunks (org_id, domain);
CREATE TABLE kc_chunks_shared PARTITION OF kc_chunks DEFAULT;
INSERT INTO kc_chunks SELECT id, org_id, domain, source, source_id, chunk_index, title, content,
    content_hash, tags, embedding_model, embedding, created_at, updated_at FROM kc_chunks_0022;
SELECT setval('kc_chunk_ids', coalesce((SELECT max(id) FROM kc_chunks_0022), 0) + 1, false);
DROP TABLE kc_chunks_0022;

-- The partition an org moves to (the name, derived from the org id, is mirrored in
-- colony.knowledge.tiering.partition_name; a test holds the two equal).
CREATE FUNCTION colony_kc_partition(org text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT 'kc_chunks_o_' || left(encode(sha256(convert_to(org, 'UTF8')), 'hex'), 16)
$$;

-- Every tiering step is the owner's (DDL), asked for by the application role for one org at
-- a time and only inside that org's own scope, like the erasure functions of 0013.
CREATE FUNCTION colony_kc_scope(org text) RETURNS text
LANGUAGE plpgsql STABLE SET search_path = public, pg_catalog AS $$
BEGIN
    IF org IS NULL OR org !~ '^[A-Za-z0-9_.:-]{{1,128}}$' THEN
        RAISE EXCEPTION 'invalid org id';
    END IF;
    IF org IS DISTINCT FROM current_setting('app.org_id', true) THEN
        RAISE EXCEPTION 'only inside the org''s own scope' USING ERRCODE = '42501';
    END IF;
    RETURN colony_kc_partition(org);
END
$$;

CREATE FUNCTION colony_kc_attached(part text) RETURNS boolean
LANGUAGE sql STABLE SET search_path = public, pg_catalog AS $$
    SELECT EXISTS (SELECT 1 FROM pg_inherits
                   WHERE inhrelid = to_regclass(part) AND inhparent = 'kc_chunks'::regclass)
$$;

-- Step 1 (no lock on kc_chunks beyond reading it): a fresh standalone copy of the org's rows,
-- shaped so that ATTACH adopts its indexes, foreign key and CHECK instead of re-checking them.
CREATE FUNCTION colony_kc_stage(org text) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_catalog AS $$
DECLARE
    part text := colony_kc_scope(org);
    copied bigint;
BEGIN
    -- moved already, or erased or being erased (a task must not leave a partition behind)
    IF colony_kc_attached(part) OR NOT EXISTS (SELECT 1 FROM organizations WHERE id = org)
       OR EXISTS (SELECT 1 FROM erasure_jobs WHERE target_org = org AND contact_id IS NULL
                  AND status = 'pending') THEN
        RETURN -1;
    END IF;
    EXECUTE format('DROP TABLE IF EXISTS %I', part);
    EXECUTE format('CREATE TABLE %I (LIKE kc_chunks INCLUDING DEFAULTS INCLUDING CONSTRAINTS'
                   ' INCLUDING INDEXES INCLUDING STORAGE, CHECK (org_id = %L))', part, org);
    EXECUTE format('ALTER TABLE %I ADD FOREIGN KEY (org_id) REFERENCES organizations(id)', part);
    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', part);
    EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', part);
    EXECUTE format('CREATE POLICY org_isolation ON %I'
                   ' USING (org_id = current_setting(''app.org_id'', true))'
                   ' WITH CHECK (org_id = current_setting(''app.org_id'', true))', part);
    EXECUTE format('INSERT INTO %I SELECT * FROM kc_chunks_shared WHERE org_id = %L', part, org);
    GET DIAGNOSTICS copied = ROW_COUNT;
    RETURN copied;
END
$$;

-- Step 2 (the long one, on a table no query sees): the ten per-domain HNSW graphs.
CREATE FUNCTION colony_kc_build(org text, work_mem_setting text) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_catalog AS $$
DECLARE
    part text := colony_kc_scope(org);
    n integer;
BEGIN
    IF to_regclass(part) IS NULL OR colony_kc_attached(part) THEN
        RAISE EXCEPTION 'org is not staged' USING ERRCODE = '55000';
    END IF;
    PERFORM set_config('maintenance_work_mem', work_mem_setting, true);
    FOR n IN 1..10 LOOP
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %I USING hnsw'
                       ' (embedding vector_cosine_ops) WHERE domain = %L',
                       part || '_hnsw_' || lpad(n::text, 2, '0'), part,
                       'KC-' || lpad(n::text, 2, '0'));
    END LOOP;
    EXECUTE format('ANALYZE %I', part);
    RETURN 10;
END
$$;

-- Step 3 (short, atomic): take the org's tier lock (its writers hold it shared, so none is
-- half-way), bring the copy up to date with what was written since step 1, delete the org's
-- rows from the shared partition and attach the copy, all in one transaction: a query sees
-- the org's rows either all shared or all in its own partition, never neither.
CREATE FUNCTION colony_kc_cutover(org text, wait_ms integer) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_catalog AS $$
DECLARE
    part text := colony_kc_scope(org);
    moved bigint;
BEGIN
    IF colony_kc_attached(part) THEN
        RETURN -1;
    END IF;
    IF to_regclass(part) IS NULL THEN
        RAISE EXCEPTION 'org is not staged' USING ERRCODE = '55000';
    END IF;
    PERFORM set_config('lock_timeout', least(greatest(wait_ms, 1), 60000)::text, true);
    PERFORM pg_advisory_xact_lock(hashtextextended('kc_tier' || chr(10) || org, 0));
    LOCK TABLE ONLY kc_chunks IN SHARE UPDATE EXCLUSIVE MODE;
    LOCK TABLE kc_chunks_shared IN ACCESS EXCLUSIVE MODE;
    EXECUTE format('DELETE FROM %I p WHERE NOT EXISTS (SELECT 1 FROM kc_chunks_shared s'
                   ' WHERE s.org_id = %L AND s.id = p.id AND s.updated_at = p.updated_at)',
                   part, org);
    EXECUTE format('INSERT INTO %I SELECT s.* FROM kc_chunks_shared s WHERE s.org_id = %L'
                   ' AND NOT EXISTS (SELECT 1 FROM %I p WHERE p.id = s.id)', part, org, part);
    DELETE FROM kc_chunks_shared WHERE org_id = org;
    GET DIAGNOSTICS moved = ROW_COUNT;
    EXECUTE format('ALTER TABLE kc_chunks ATTACH PARTITION %I FOR VALUES IN (%L)', part, org);
    RETURN moved;
END
$$;

-- Erasure (0013's function, same name and grant): an org's partition, its indexes and rows go
-- together; a staged copy not yet attached goes too.
CREATE OR REPLACE FUNCTION colony_drop_org_indexes(org text) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_catalog AS $$
DECLARE
    part text := colony_kc_scope(org);
    dropped integer;
BEGIN
    IF to_regclass(part) IS NULL THEN
        RETURN 0;
    END IF;
    SELECT count(*) + 1 INTO dropped FROM pg_index WHERE indrelid = to_regclass(part);
    EXECUTE format('DROP TABLE %I', part);
    RETURN dropped;
END
$$;
REVOKE ALL ON FUNCTION colony_kc_stage(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION colony_kc_build(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION colony_kc_cutover(text, integer) FROM PUBLIC;
