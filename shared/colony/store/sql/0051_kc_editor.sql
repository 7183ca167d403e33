-- Migration 0051 (issue 34 item 2): documents a person writes in the Knowledge Core editor
-- on /overview are a source of their own ('editor'), beside Notion pages, approved agent
-- output and the demo's seed. Never edit once shipped: append a new migration.
--
-- The check is on the partitioned table: replacing it there replaces it on every partition
-- (an org's own partition, made LIKE kc_chunks INCLUDING CONSTRAINTS, copies the new one).
-- 0023 left it unnamed, and PostgreSQL named it while 0022's table still held the first
-- choice of name, so it is found by what it checks.
DO $$
DECLARE
    found text;
BEGIN
    SELECT conname INTO STRICT found FROM pg_constraint
    WHERE conrelid = 'kc_chunks'::regclass AND contype = 'c'
      AND pg_get_constraintdef(oid) LIKE '%source%notion%';
    EXECUTE format('ALTER TABLE kc_chunks DROP CONSTRAINT %I', found);
END
$$;
ALTER TABLE kc_chunks ADD CONSTRAINT kc_chunks_source_check
    CHECK (source IN ('notion', 'approval', 'seed', 'editor'));
