-- Migration 0042 (issue 33 items 1, 4 and 5): what the research runner fetched for an org,
-- and how far it got. Each org researches on its own: a page fetched for one org is never
-- another's row (two orgs researching one company share only its site's pace, migration
-- 0041). Page bytes and extracted text live in the assets bucket under research/<org>/;
-- these rows name them. Never edit once shipped: append a new migration.

-- One row per (org, company domain): the research of that company, resumable. ``frontier``
-- is what is still to fetch in this pass, ``visited`` what was tried ([url, role] pairs);
-- ``waiters`` are the messages to publish when the pass ends (a campaign's handoff to
-- AGT-003: ids only), cleared once published. One task works a pass at a time
-- (``lease_until``); ``wakes`` counts its tasks, naming each one apart.
CREATE TABLE research_jobs (
    org_id       text NOT NULL REFERENCES organizations(id),
    domain       text NOT NULL CHECK (domain ~ '^[a-z0-9][a-z0-9.-]{0,252}$'),
    status       text NOT NULL CHECK (status IN ('running', 'done')),
    outcome      text CHECK (outcome IN ('researched', 'nothing_read', 'no_website')),
    pass         integer NOT NULL DEFAULT 1 CHECK (pass >= 1),
    frontier     jsonb NOT NULL DEFAULT '[]',
    visited      jsonb NOT NULL DEFAULT '[]',
    waiters      jsonb NOT NULL DEFAULT '[]',
    lease_until  timestamptz,
    wakes        integer NOT NULL DEFAULT 0 CHECK (wakes >= 0),
    pages        integer NOT NULL DEFAULT 0 CHECK (pages >= 0),  -- fetches this pass
    downloads    integer NOT NULL DEFAULT 0 CHECK (downloads >= 0),  -- bodies read this pass
    requested_by text NOT NULL,
    started_at   timestamptz NOT NULL DEFAULT now(),
    touched_at   timestamptz NOT NULL DEFAULT now(),  -- a task's last claim, save or wake
    finished_at  timestamptz,
    CHECK ((status = 'done') = (finished_at IS NOT NULL AND outcome IS NOT NULL)),
    PRIMARY KEY (org_id, domain)
);

-- One row per URL an org's research asked for: what happened (``outcome``: a FetchOutcome),
-- what was read (kind, title, dates, the validators for a conditional request next time),
-- and where its bytes and text are kept, with their hashes.
CREATE TABLE research_sources (
    org_id        text NOT NULL REFERENCES organizations(id),
    id            text NOT NULL CHECK (id ~ '^[0-9a-f]{24}$'),  -- of (domain, url)
    domain        text NOT NULL,
    url           text NOT NULL CHECK (length(url) <= 2048),
    final_url     text NOT NULL CHECK (length(final_url) <= 2048),
    role          text NOT NULL,   -- why it was fetched: home, about, news, job_board, ...
    kind          text,            -- what it was read as: page, feed, job_board, pdf, sitemap
    outcome       text NOT NULL,
    status        integer,
    detail        text NOT NULL DEFAULT '',
    problem       text,            -- what the reader found wrong (malformed_feed, encrypted_pdf)
    title         text,
    content_type  text,
    charset       text,            -- what decoded the stored bytes (a 304 re-reads them)
    fetched_at    timestamptz NOT NULL,  -- the last fetch (a 304 included)
    downloaded_at timestamptz,           -- when the stored body was downloaded
    published_at  date,
    date_source   text,
    content_hash  text CHECK (content_hash ~ '^[0-9a-f]{64}$'),
    raw_object    text,
    text_hash     text CHECK (text_hash ~ '^[0-9a-f]{64}$'),
    text_object   text,
    text_chars    integer,
    etag          text,
    last_modified text,
    needs_browser boolean NOT NULL DEFAULT false,
    pass          integer NOT NULL,
    PRIMARY KEY (org_id, id)
);
CREATE INDEX research_sources_domain ON research_sources (org_id, domain);
CREATE INDEX research_sources_fetched ON research_sources (org_id, fetched_at);

-- A stored text's passages, embedded, so AGT-003 is given the ones nearest what the org
-- looks for (exact scan: a company has tens of passages, never enough for an index).
CREATE TABLE research_passages (
    org_id     text NOT NULL,
    source_id  text NOT NULL,
    ord        integer NOT NULL CHECK (ord >= 0),
    text       text NOT NULL CHECK (text <> ''),
    published_at date,  -- the passage's own date (a feed entry, a job post), else its source's
    model      text NOT NULL,
    embedding  vector({dim}) NOT NULL,
    PRIMARY KEY (org_id, source_id, ord),
    FOREIGN KEY (org_id, source_id) REFERENCES research_sources (org_id, id) ON DELETE CASCADE
);

-- Whether the campaign chain researches this org's prospects' companies (on unless the org
-- turns it off: an org whose prospects arrive researched, or that will not have its
-- prospects' sites read).
ALTER TABLE org_settings ADD COLUMN research_enabled boolean NOT NULL DEFAULT true;
