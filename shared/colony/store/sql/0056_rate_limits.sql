-- Migration 0056 (issue 38 item 1): provider limits shared fairly between orgs, across every
-- instance (colony.runtime.limiter, docs/limits.md). Never edit once shipped: append a new
-- migration.
--
-- One row per limited thing (``key``: 'model:gpt-4o-mini', 'mailbox:<id>', 'domain:<name>'):
-- its configured limit, the AIMD factor a provider's 429 lowers and quiet windows raise, the
-- shared bucket's levels, and each org's part of it in ``orgs``. Like ``research_sites`` it is
-- not any org's: every org drawing on one model shares its row, so there is no org_id column
-- and no row-level security. ``orgs`` maps an org id to its weight, its own bucket's levels,
-- until when it counts as having work waiting and where its next booked retry is; an org is
-- dropped from it ``FORGET_SECONDS`` after its last request, so an erased org's id does not
-- outlive its last call by more than that. Times are seconds (epoch, or a benchmark's
-- simulated clock: the limiter is given its clock), so every instance reads one clock.
CREATE TABLE rate_limits (
    key               text PRIMARY KEY CHECK (length(key) BETWEEN 3 AND 300),
    per_minute        double precision NOT NULL CHECK (per_minute > 0),
    tokens_per_minute double precision CHECK (tokens_per_minute > 0),
    factor            double precision NOT NULL DEFAULT 1 CHECK (factor > 0 AND factor <= 1),
    requests          double precision NOT NULL,  -- the shared bucket (may run into debt)
    tokens            double precision NOT NULL,
    at                double precision NOT NULL,  -- when the levels were last brought forward
    decreased_at      double precision,           -- the last multiplicative decrease (a 429)
    increased_at      double precision,           -- the last additive increase
    throttled         bigint NOT NULL DEFAULT 0,  -- 429s reported by callers
    granted           bigint NOT NULL DEFAULT 0,
    waited            bigint NOT NULL DEFAULT 0,  -- refusals answered with a booked retry
    usage_ratio       double precision NOT NULL DEFAULT 1  -- tokens used / reserved (EWMA)
        CHECK (usage_ratio > 0),
    orgs              jsonb NOT NULL DEFAULT '{}'::jsonb
);
