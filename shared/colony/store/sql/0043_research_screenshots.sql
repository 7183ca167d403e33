-- Migration 0043 (issue 33 item 4): a page that needs a browser to show its text, rendered
-- (colony.adapters.chromium). Its screenshot is kept beside its bytes and text in the assets
-- bucket under research/<org>/<source id>/, a PNG named by its sha256; the rendered text
-- replaces the empty text the raw page gave (text_object, text_hash as before). What the
-- render came to is kept whatever it was: a page whose render ran out of time says so.
-- Never edit once shipped: append a new migration.
ALTER TABLE research_sources
    ADD COLUMN screenshot_object text,
    ADD COLUMN screenshot_hash   text CHECK (screenshot_hash ~ '^[0-9a-f]{64}$'),
    ADD COLUMN render_outcome    text CHECK (render_outcome IN ('rendered', 'timeout', 'failed')),
    ADD COLUMN render_detail     text,
    ADD CHECK ((screenshot_object IS NULL) = (screenshot_hash IS NULL));
