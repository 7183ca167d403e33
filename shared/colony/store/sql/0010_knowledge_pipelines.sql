ALTER TABLE recordings ADD COLUMN transcript_tokens integer;
ALTER TABLE recordings ADD COLUMN chunk_count integer;
ALTER TABLE recordings ADD COLUMN processed_at timestamptz;
CREATE TABLE notion_verifications (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    verification_token  text NOT NULL,
    received_at         timestamptz NOT NULL DEFAULT now()
);
