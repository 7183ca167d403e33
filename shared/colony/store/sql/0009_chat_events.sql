ALTER TABLE chat_sessions ADD COLUMN last_seq bigint NOT NULL DEFAULT 0;
ALTER TABLE chat_turns ADD COLUMN turn_id text;
CREATE TABLE chat_events (
    org_id      text NOT NULL REFERENCES organizations(id),
    session_id  text NOT NULL REFERENCES chat_sessions(id),
    seq         bigint NOT NULL CHECK (seq > 0),
    turn_id     text NOT NULL,
    type        text NOT NULL CHECK (type IN ('accepted', 'delta', 'tool_call', 'tool_result',
                                              'approval_required', 'error', 'done')),
    data        jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (session_id, seq)
);
