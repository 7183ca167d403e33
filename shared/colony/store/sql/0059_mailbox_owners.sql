-- Migration 0059 (issue 35 item 1): a sender mailbox may belong to one of the org's people.
-- Never edit once shipped: append a new migration.
--
-- ``user_id``: the person whose mailbox it is (NULL: the team's). A new contact's first
-- message goes from its owner's ready mailbox when it has room today (colony.flows.outbound.
-- senders.pick_mailbox_for_contact); a contact's later steps keep their first mailbox. The
-- composite key keeps the person in the mailbox's own org; a person who leaves stays in
-- org_members as 'left', and their mailboxes are paused in the same transaction
-- (colony.flows.tenants.owners.hand_over; docs/mailboxes.md says why not handed on).
ALTER TABLE sender_mailboxes ADD COLUMN user_id text;
ALTER TABLE sender_mailboxes ADD CONSTRAINT sender_mailboxes_user_fk
    FOREIGN KEY (org_id, user_id) REFERENCES org_members (org_id, user_id);
CREATE INDEX sender_mailboxes_user ON sender_mailboxes (org_id, user_id)
    WHERE user_id IS NOT NULL;
