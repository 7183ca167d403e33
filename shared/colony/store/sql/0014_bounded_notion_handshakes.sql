CREATE INDEX notion_verifications_received ON notion_verifications (received_at);
CREATE FUNCTION record_notion_verification(
    token text, at timestamptz, per_window integer, window_seconds integer, keep integer
) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(7243502);
    IF (SELECT count(*) FROM notion_verifications
        WHERE received_at > at - make_interval(secs => least(greatest(window_seconds, 1), 86400))
          AND received_at <= at) >= least(greatest(per_window, 1), 100) THEN
        RETURN false;
    END IF;
    INSERT INTO notion_verifications (verification_token, received_at) VALUES (token, at);
    DELETE FROM notion_verifications WHERE id NOT IN (
        SELECT id FROM notion_verifications ORDER BY id DESC LIMIT least(greatest(keep, 1), 100)
    );
    RETURN true;
END
$$;
