-- Migration 0037 (issue 19 item 5): a brief and a chat answer name the model call that made
-- them, as an approval item does (``llm_call_id``, 0029), so ``colony explain`` follows a
-- stored link for every kind of output. Never edit once shipped: append a new migration.
ALTER TABLE daily_briefs ADD COLUMN llm_call_id text;
-- on the assistant rows a call wrote (its answer, or the tool calls it made)
ALTER TABLE chat_turns ADD COLUMN llm_call_id text;
-- ``colony explain <turn id>``: a turn's rows, without walking the org's whole history
CREATE INDEX chat_turns_by_turn ON chat_turns (org_id, turn_id) WHERE turn_id IS NOT NULL;
