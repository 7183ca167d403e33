-- Migration 0047 (issue 39 item 1): each sequence step is used as written.
--
-- A LinkedIn or call step is a task for a person (approval item kind 'sequence_task': the
-- talking points AGT-005 drafted; a person marks it done or skips it, and either moves the
-- sequence on). A contact's sequence is the library's for the campaign's angle and the tier
-- AGT-004 decided; when the library has no sequence for that tier it walks the campaign
-- tier's, recorded in ``sequence_tier`` (NULL: the same as ``tier``). Delays are never negative: every way into the library refuses one
-- (the admin contract), and the table now does too; NOT VALID because a row written before
-- could not be corrected without losing what its org wrote (readers treat one as 0).
-- Never edit once shipped: append a new migration.
--
-- The kind check is replaced NOT VALID and then validated, as in 0035: the validation scans the
-- table without blocking its writers; only the swap takes the table's lock.
SET LOCAL lock_timeout = '5s';
ALTER TABLE approval_items DROP CONSTRAINT approval_items_kind_check;
ALTER TABLE approval_items ADD CONSTRAINT approval_items_kind_check CHECK (
    kind IN ('outbound_message', 'deal_update', 'kc_update_candidate', 'content_piece',
             'follow_up', 'deployment_kit', 'tool_action', 'missing_data', 'sequence_task')
) NOT VALID;
ALTER TABLE approval_items VALIDATE CONSTRAINT approval_items_kind_check;
ALTER TABLE sequences ADD CONSTRAINT sequences_delay_days_check CHECK (delay_days >= 0) NOT VALID;
ALTER TABLE sequence_enrollments ADD COLUMN sequence_tier text
    CHECK (sequence_tier IN ('T1', 'T2', 'T3', 'T4', 'T5'));
