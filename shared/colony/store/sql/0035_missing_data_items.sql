-- Migration 0035 (issue 15 item 4): a contact whose agent answered missing_data (CONST-004)
-- is put on the approval queue as an item of kind 'missing_data', so a person sees which
-- fields were missing for whom. Such an item can only be dismissed (rejected): approving it
-- has nothing to send (colony.flows.approval_kinds). Never edit once shipped.
--
-- The check is replaced NOT VALID and then validated: the validation scans approval_items
-- without blocking its writers; only the swap itself takes the table's lock.
SET LOCAL lock_timeout = '5s';
ALTER TABLE approval_items DROP CONSTRAINT approval_items_kind_check;
ALTER TABLE approval_items ADD CONSTRAINT approval_items_kind_check CHECK (
    kind IN ('outbound_message', 'deal_update', 'kc_update_candidate', 'content_piece',
             'follow_up', 'deployment_kit', 'tool_action', 'missing_data')
) NOT VALID;
ALTER TABLE approval_items VALIDATE CONSTRAINT approval_items_kind_check;
