CREATE TABLE erasure_jobs (
    id            text PRIMARY KEY DEFAULT gen_random_uuid()::text,
    target_org    text NOT NULL CHECK (target_org <> ''),
    contact_id    text,
    requested_by  text NOT NULL,
    status        text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done')),
    phases_done   jsonb NOT NULL DEFAULT '[]',
    report        jsonb,
    created_at    timestamptz NOT NULL DEFAULT now(),
    finished_at   timestamptz
);
CREATE UNIQUE INDEX erasure_jobs_one_open
    ON erasure_jobs (target_org, coalesce(contact_id, '')) WHERE status = 'pending';
CREATE TABLE org_retention (
    org_id      text NOT NULL REFERENCES organizations(id),
    data_class  text NOT NULL
                CHECK (data_class IN ('transcripts', 'chat_events', 'llm_calls', 'outbox_bodies')),
    days        integer NOT NULL CHECK (days >= 1),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, data_class)
);
CREATE FUNCTION colony_drop_org_indexes(org text) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_catalog AS $$
DECLARE
    idx regclass;
    dropped integer := 0;
BEGIN
    IF org IS NULL OR org !~ '^[A-Za-z0-9_.:-]{1,128}$' THEN
        RAISE EXCEPTION 'invalid org id';
    END IF;
    IF org IS DISTINCT FROM current_setting('app.org_id', true) THEN
        RAISE EXCEPTION 'only inside the org''s own scope' USING ERRCODE = '42501';
    END IF;
    FOR idx IN
        SELECT i.indexrelid::regclass FROM pg_index i
        WHERE i.indrelid = 'kc_chunks'::regclass AND i.indpred IS NOT NULL
          AND strpos(pg_get_expr(i.indpred, i.indrelid),
                     '(org_id = ' || quote_literal(org) || '::text)') > 0
    LOOP
        EXECUTE format('DROP INDEX %s', idx);
        dropped := dropped + 1;
    END LOOP;
    RETURN dropped;
END
$$;
CREATE FUNCTION colony_erase_rejections(org text) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_catalog AS $$
DECLARE
    gone integer;
BEGIN
    IF org IS NULL OR org IS DISTINCT FROM current_setting('app.org_id', true) THEN
        RAISE EXCEPTION 'only inside the org''s own scope' USING ERRCODE = '42501';
    END IF;
    DELETE FROM rejected_deliveries WHERE claimed_org_id = org;
    GET DIAGNOSTICS gone = ROW_COUNT;
    RETURN gone;
END
$$;
REVOKE ALL ON FUNCTION colony_drop_org_indexes(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION colony_erase_rejections(text) FROM PUBLIC;
