CREATE TABLE dead_letters (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    org_id       text NOT NULL REFERENCES organizations(id),
    topic        text NOT NULL,
    message_id   text NOT NULL,
    data         jsonb,
    attributes   jsonb NOT NULL DEFAULT '{}',
    attempts     integer NOT NULL,
    last_error   text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (topic, message_id)
);
CREATE TABLE rejected_deliveries (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    function        text NOT NULL,
    event_id        text,
    claimed_org_id  text,
    reason          text NOT NULL,
    received_at     timestamptz NOT NULL DEFAULT now()
);
