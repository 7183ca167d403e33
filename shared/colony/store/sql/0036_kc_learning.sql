-- Migration 0036 (issue 19 item 3): the Knowledge Core learns from approved work; why, in
-- colony.store.migrations. Never edit once shipped: append a new migration.

-- A deployment kit keeps its document's text beside the bucket copy: approving the kit adds
-- it to KC-10 in the decision's own transaction, which must not wait on (or be granted) a
-- read of the assets bucket. Kits built before this have none; approving one still releases it.
ALTER TABLE deployment_kits ADD COLUMN document text;
