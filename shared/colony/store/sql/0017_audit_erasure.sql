CREATE FUNCTION colony_erase_audit(org text) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_catalog AS $$
DECLARE
    gone integer;
BEGIN
    IF org IS NULL OR org IS DISTINCT FROM current_setting('app.org_id', true) THEN
        RAISE EXCEPTION 'only inside the org''s own scope' USING ERRCODE = '42501';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM erasure_jobs WHERE target_org = org AND contact_id IS NULL
                   AND status = 'pending') THEN
        RAISE EXCEPTION 'no open erasure job for this org' USING ERRCODE = '42501';
    END IF;
    DELETE FROM audit_log WHERE org_id = org;
    GET DIAGNOSTICS gone = ROW_COUNT;
    RETURN gone;
END
$$;
CREATE FUNCTION colony_redact_audit(org text, needles text[], redacted text) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_catalog AS $$
DECLARE
    needle text;
    changed integer := 0;
    n integer;
BEGIN
    IF org IS NULL OR org IS DISTINCT FROM current_setting('app.org_id', true) THEN
        RAISE EXCEPTION 'only inside the org''s own scope' USING ERRCODE = '42501';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM erasure_jobs WHERE target_org = org
                   AND contact_id IS NOT NULL AND status = 'pending') THEN
        RAISE EXCEPTION 'no open prospect erasure job for this org' USING ERRCODE = '42501';
    END IF;
    FOREACH needle IN ARRAY needles LOOP
        CONTINUE WHEN needle IS NULL OR needle = '';
        UPDATE audit_log SET
            approval_item_id = replace(approval_item_id, needle, redacted),
            actor = replace(actor, needle, redacted),
            reason = replace(reason, needle, redacted),
            detail = replace(detail::text, needle, redacted)::jsonb
        WHERE org_id = org AND (strpos(coalesce(approval_item_id, ''), needle) > 0
            OR strpos(actor, needle) > 0 OR strpos(coalesce(reason, ''), needle) > 0
            OR strpos(detail::text, needle) > 0);
        GET DIAGNOSTICS n = ROW_COUNT;
        changed := changed + n;
    END LOOP;
    RETURN changed;
END
$$;
REVOKE ALL ON FUNCTION colony_erase_audit(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION colony_redact_audit(text, text[], text) FROM PUBLIC;
