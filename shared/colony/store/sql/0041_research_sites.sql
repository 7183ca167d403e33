-- Migration 0041 (issue 33 item 2): politeness towards the sites the research runner reads,
-- shared by every instance. Sites are not any org's: two orgs researching one company share
-- its site's pace, so neither table has an org_id or row-level security (as for
-- ``held_inbound_mail``), and neither holds anything about an org or a person: host names,
-- times and public robots.txt text. Never edit once shipped: append a new migration.

-- One row per site (a host, ``www.`` folded in): at most one request in flight (the lease)
-- and none before ``next_allowed_at`` (about one a second, longer if robots.txt asks).
-- colony.store.research.sites claims and releases it, each in one statement.
CREATE TABLE research_sites (
    site            text PRIMARY KEY CHECK (site <> '' AND site = lower(site)),
    next_allowed_at timestamptz NOT NULL DEFAULT '-infinity',
    lease_id        text,         -- who holds the site now (random per claim)
    lease_until     timestamptz,  -- when an unreleased claim (a crashed instance) lapses
    CHECK ((lease_id IS NULL) = (lease_until IS NULL))
);

-- The robots.txt of each origin (scheme://host[:port]) as last fetched: what it meant
-- (``verdict``), the text when it had rules, and when, so each origin's file is fetched once
-- per freshness window across every instance (colony.adapters.robots).
CREATE TABLE research_robots (
    origin      text PRIMARY KEY CHECK (origin ~ '^https?://'),
    verdict     text NOT NULL CHECK (verdict IN ('rules', 'allow_all', 'disallow_all')),
    body        text NOT NULL DEFAULT '' CHECK (octet_length(body) <= 2097152),
    status      integer,      -- the HTTP status it was answered with; NULL: no answer
    fetched_at  timestamptz NOT NULL
);
