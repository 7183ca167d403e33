-- Migration 0036 (issue 19 item 3): the Knowledge Core learns from approved work; why, in
-- colony.store.migrations. Never edit once shipped: append a new migration.

-- A deployment kit keeps its document's text beside the bucket copy: approving the kit adds
-- it to KC-10 in the decision's own transaction, which must not wait on (or be granted) a
-- read of the assets bucket. Kits built before this have none; approving one still releases it.
ALTER TABLE deployment_kits ADD COLUMN document text;

-- AGT-005's exemplars are chosen by angle (colony.knowledge.outcomes): this finds the angle's
-- KC-08 rows of the org directly, where the (org_id, domain) btree walked every KC-08 row of
-- the org and filtered on the tag (bench/exemplars.py: the added assembly time on an org's own
-- partition). Made on the partitioned table, so every partition has it: the shared one, each
-- org's own, and the copy colony_kc_stage makes for a move (LIKE kc_chunks INCLUDING INDEXES),
-- which ATTACH then adopts rather than builds under its lock.
CREATE INDEX kc_chunks_kc08_angle ON kc_chunks (org_id, (tags->>'angle')) WHERE domain = 'KC-08';
