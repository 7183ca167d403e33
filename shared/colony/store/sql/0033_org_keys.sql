-- Migration 0033 (issue 16 item 4): every org-scoped table ready to be distributed by org_id.
-- A distributed engine (Citus, AlloyDB's) enforces a primary key or unique constraint only
-- when it holds the distribution column, and keeps a foreign key (and a join) on one node
-- only when it carries it. So every key below gains org_id, and every foreign key between
-- org-scoped tables becomes (org_id, x) -> parent (org_id, key). Why and what comes next:
-- docs/scale.md. Never edit once shipped: append a new migration.
--
-- Online enough for our sizes: the whole migration is one transaction that takes each
-- table's lock for as long as building one btree over it takes (tens of milliseconds at
-- 10^5 rows); ``lock_timeout`` makes it give up rather than queue behind a long transaction
-- and stall every writer behind it (run ``colony db migrate`` again). The foreign keys are
-- added NOT VALID and then validated, a scan that blocks no writer.
SET LOCAL lock_timeout = '5s';

-- 1. The foreign keys into the tables whose keys change, whoever added them (a migration
--    written in parallel with this one included), are remembered and dropped; step 4 adds
--    them back carrying org_id.
CREATE TEMP TABLE colony_0033_fks ON COMMIT DROP AS
SELECT c.conrelid::regclass::text AS child, c.conname AS name,
       c.confrelid::regclass::text AS parent, c.confdeltype AS on_delete,
       c.confupdtype AS on_update,
       ARRAY(SELECT quote_ident(a.attname) FROM unnest(c.conkey) WITH ORDINALITY k(n, i)
             JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n
             ORDER BY k.i) AS cols,
       ARRAY(SELECT quote_ident(a.attname) FROM unnest(c.confkey) WITH ORDINALITY k(n, i)
             JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n
             ORDER BY k.i) AS parent_cols
FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid
WHERE c.contype = 'f' AND c.connamespace = 'public'::regnamespace AND NOT t.relispartition
  -- a foreign key that already carries org_id (0027's, say) is ready as it is
  AND NOT EXISTS (SELECT 1 FROM unnest(c.conkey) k(n)
                  JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n
                  WHERE a.attname = 'org_id')
  AND c.confrelid::regclass::text IN (
      'approval_items', 'campaigns', 'chat_sessions', 'contacts', 'deals', 'import_jobs',
      'notion_workspaces', 'outbox', 'audit_log', 'campaign_runs', 'chat_turns',
      'daily_briefs', 'dead_letters', 'deployment_kits', 'drive_channels', 'icp_definitions',
      'llm_calls', 'notion_syncs', 'published_content', 'recordings', 'replies', 'sequences',
      'campaign_contacts', 'run_steps', 'chat_events', 'import_errors');
DO $$
DECLARE
    fk record;
BEGIN
    FOR fk IN SELECT * FROM colony_0033_fks LOOP
        EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', fk.child, fk.name);
    END LOOP;
END
$$;

-- 2. Primary keys: (org_id, what they were). The new index is built first, then swapped in
--    under the old constraint's name (ADD ... USING INDEX renames it).
CREATE FUNCTION pg_temp.colony_rekey(tbl text, con text, kind text, cols text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('CREATE UNIQUE INDEX %I ON %I (org_id, %s)', con || '_0033', tbl, cols);
    EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I, ADD CONSTRAINT %I %s USING INDEX %I',
                   tbl, con, con, kind, con || '_0033');
END
$$;
SELECT pg_temp.colony_rekey(t, t || '_pkey', 'PRIMARY KEY', cols) FROM (VALUES
    ('approval_items', 'id'), ('audit_log', 'id'), ('campaign_runs', 'id'),
    ('campaigns', 'id'), ('chat_sessions', 'id'), ('chat_turns', 'id'), ('contacts', 'id'),
    ('daily_briefs', 'id'), ('dead_letters', 'id'), ('deals', 'id'),
    ('deployment_kits', 'id'), ('drive_channels', 'id'), ('icp_definitions', 'id'),
    ('import_jobs', 'id'), ('llm_calls', 'id'), ('notion_syncs', 'id'),
    ('notion_workspaces', 'workspace_id'), ('outbox', 'id'), ('published_content', 'id'),
    ('recordings', 'id'), ('replies', 'id'), ('sequences', 'id'),
    ('campaign_contacts', 'campaign_id, contact_id'), ('run_steps', 'run_id, step_key'),
    ('chat_events', 'session_id, seq'), ('import_errors', 'job_id, row_number')
) AS keys (t, cols);

-- 3. Unique constraints, renamed for what they now hold. What was unique across orgs is
--    unique within one: approval items, Pub/Sub message ids and link nonces are the org's
--    own, and our Message-IDs and nonces are random. Two lookups made before the org is
--    known keep a plain index: a reply's Message-ID (outbox ``message_lookup``) and a Notion
--    event's workspace (``notion_route``). A Notion workspace stays one org's: the claim
--    checks for another org's row under a lock (colony.store.notion_workspaces.connect).
SELECT pg_temp.colony_rekey(t, con, 'UNIQUE', cols) FROM (VALUES
    ('audit_log', 'audit_log_link_nonce_key', 'link_nonce'),
    ('dead_letters', 'dead_letters_topic_message_id_key', 'topic, message_id'),
    ('deployment_kits', 'deployment_kits_approval_item_id_key', 'approval_item_id'),
    ('outbox', 'outbox_approval_item_id_key', 'approval_item_id'),
    ('outbox', 'outbox_message_id_key', 'message_id'),
    ('published_content', 'published_content_approval_item_id_key', 'approval_item_id')
) AS keys (t, con, cols);
ALTER TABLE audit_log RENAME CONSTRAINT audit_log_link_nonce_key TO audit_log_org_link_nonce_key;
ALTER TABLE dead_letters RENAME CONSTRAINT dead_letters_topic_message_id_key
    TO dead_letters_org_topic_message_id_key;
ALTER TABLE deployment_kits RENAME CONSTRAINT deployment_kits_approval_item_id_key
    TO deployment_kits_org_approval_item_id_key;
ALTER TABLE outbox RENAME CONSTRAINT outbox_approval_item_id_key TO outbox_org_approval_item_id_key;
ALTER TABLE outbox RENAME CONSTRAINT outbox_message_id_key TO outbox_org_message_id_key;
ALTER TABLE published_content RENAME CONSTRAINT published_content_approval_item_id_key
    TO published_content_org_approval_item_id_key;
CREATE INDEX outbox_message_id ON outbox (message_id);
CREATE INDEX notion_workspaces_workspace ON notion_workspaces (workspace_id);

-- 4. The foreign keys of step 1, back with org_id in front on both sides and the same
--    actions; ON DELETE SET NULL names its own column, never org_id (which is NOT NULL).
DO $$
DECLARE
    fk record;
    action text;
BEGIN
    FOR fk IN SELECT * FROM colony_0033_fks LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = fk.child::regclass
                       AND attname = 'org_id' AND NOT attisdropped) THEN
            RAISE EXCEPTION '% references % but has no org_id to carry', fk.child, fk.parent;
        END IF;
        action := CASE fk.on_delete
            WHEN 'c' THEN ' ON DELETE CASCADE'
            WHEN 'r' THEN ' ON DELETE RESTRICT'
            WHEN 'n' THEN ' ON DELETE SET NULL (' || array_to_string(fk.cols, ', ') || ')'
            WHEN 'd' THEN ' ON DELETE SET DEFAULT (' || array_to_string(fk.cols, ', ') || ')'
            ELSE '' END
            || CASE fk.on_update WHEN 'c' THEN ' ON UPDATE CASCADE'
                                 WHEN 'r' THEN ' ON UPDATE RESTRICT' ELSE '' END;
        EXECUTE format('ALTER TABLE %s ADD CONSTRAINT %I FOREIGN KEY (org_id, %s)'
                       ' REFERENCES %s (org_id, %s)%s NOT VALID',
                       fk.child, fk.name, array_to_string(fk.cols, ', '), fk.parent,
                       array_to_string(fk.parent_cols, ', '), action);
        EXECUTE format('ALTER TABLE %s VALIDATE CONSTRAINT %I', fk.child, fk.name);
    END LOOP;
END
$$;
DROP FUNCTION pg_temp.colony_rekey(text, text, text, text);
