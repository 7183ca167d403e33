"""Append-only, named schema migrations, tracked in ``colony_migrations``.

Run by ``colony db migrate`` (and by the local stack and the test fixtures) as the owner role,
never on a function's cold start. Never edit a migration that has shipped: append a new one.

Org isolation (CONST-003) is enforced by PostgreSQL itself: every org-scoped table has row-level
security keyed on the transaction-local setting ``app.org_id`` (see ``store.db``). The
application connects as a role that is neither superuser, nor ``BYPASSRLS``, nor the tables'
owner, and the tables are ``FORCE``d as well so that even an owner connection is scoped.
A transaction with no ``app.org_id`` sees no rows at all: ``current_setting(..., true)`` is
NULL or '' then, and no ``org_id`` equals either.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from colony.errors import ConfigError


@dataclass(frozen=True, slots=True)
class Migration:
    name: str
    sql: str


# Tables put under row-level security by migration 0003. Frozen: a migration's SQL must never
# change once it has run, so later tables get their policy in their own migration.
_RLS_0003: tuple[str, ...] = (
    "icp_definitions",
    "contacts",
    "deals",
    "sequences",
    "campaigns",
    "campaign_contacts",
    "campaign_runs",
    "run_steps",
    "recordings",
    "kc_chunks",
    "chat_sessions",
    "chat_turns",
    "daily_briefs",
    "approval_items",
    "outbox",
    "processed_events",
    "llm_calls",
)

# Every table whose rows belong to exactly one org through its ``org_id`` column
# (``organizations`` is scoped on its own ``id``); a schema test keeps this complete, and
# another holds each one ready to be distributed by org: ``org_id`` in its primary key and
# unique constraints, and in every foreign key to another of these tables (migration 0033).
ORG_SCOPED_TABLES: tuple[str, ...] = (
    *_RLS_0003,
    "dead_letters",
    "chat_events",
    "published_content",
    "deployment_kits",
    "audit_log",
    "suppressions",
    "org_retention",
    "org_settings",
    "sequence_enrollments",
    "replies",
    "notion_workspaces",
    "notion_syncs",
    "drive_channels",
    "import_jobs",
    "import_errors",
    "contact_signals",
    "kc_chunk_credits",
    "resource_claims",
)

# The first schema is long enough to read best as SQL: it lives beside this module, byte for
# byte the text that shipped as migration 0001 (never edit it; append a new migration).
_SQL = Path(__file__).with_name("sql")


def _core() -> str:
    return (_SQL / "0001_core_entities.sql").read_text(encoding="utf-8")


# ENT-007 Knowledge Core. ``{dim}`` is the configured embedding dimension (an int, validated).
#
# How pgvector must be queried here: order by the raw ``<=>`` operator ascending with a LIMIT,
# with the org and domain as *literals* so the planner can pick the matching partial HNSW
# index. (The per-domain indexes made here were superseded by per-(org, domain) ones in 0005,
# and those by per-org partitions in 0023; see colony.knowledge.tiering.)
_KNOWLEDGE_CORE = """
CREATE TABLE kc_chunks (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    org_id           text NOT NULL REFERENCES organizations(id),
    domain           text NOT NULL CHECK (domain ~ '^KC-(0[1-9]|10)$'),
    source           text NOT NULL CHECK (source IN ('notion', 'approval', 'seed')),
    source_id        text NOT NULL CHECK (source_id <> ''),
    chunk_index      integer NOT NULL CHECK (chunk_index >= 0),
    title            text,
    content          text NOT NULL CHECK (content <> ''),
    content_hash     text NOT NULL,
    tags             jsonb NOT NULL DEFAULT '{{}}',
    embedding_model  text NOT NULL,
    embedding        vector({dim}) NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (org_id, source, source_id, chunk_index)
);
CREATE INDEX kc_chunks_org_domain ON kc_chunks (org_id, domain);
{hnsw}
"""

# Messages that exhausted their delivery attempts (the local transport's dead-letter topic),
# and pushes rejected as unrecoverable (bad payload): acknowledged, never retried, recorded.
# Rejections keep ids and the reason only, never the payload (it may hold another org's data),
# and the application role may insert them but not read them (see ensure_app_role_grants).
_DELIVERY_FAILURES = """
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
"""

# Chat (issue 5). ``chat_sessions.last_seq`` hands out event ids (the row update also
# serialises concurrent appends); ``chat_events`` keeps every SSE event for replay.
_CHAT_EVENTS = """
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
"""

# Retention and erasure (issue 14 item 6). ``erasure_jobs`` is the durable record of an org or
# data-subject erasure: it outlives the org (so it names it as ``target_org``, not ``org_id``,
# and has no foreign key), keeps ids and the verification report, never a name or an email.
# ``org_retention`` holds an org's own retention periods, each within the deployment's limit
# (``Settings.retention_max_days``). Two SECURITY DEFINER functions let the application role
# do exactly two owner-only things for one org, and only inside that org's own scope
# (``app.org_id``): drop its per-org HNSW indexes (an index can only be dropped by its
# table's owner) and delete the rejections that claimed it (the application role may not
# read ``rejected_deliveries``).
_ERASURE = """
CREATE TABLE erasure_jobs (
    id            text PRIMARY KEY DEFAULT gen_random_uuid()::text,
    target_org    text NOT NULL CHECK (target_org <> ''),
    contact_id    text,
    requested_by  text NOT NULL,
    status        text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done')),
    phases_done   jsonb NOT NULL DEFAULT '[]',
    report        jsonb,
    created_at    timestamptz NOT NULL DEFAULT now(),
    finished_at   timestamptz
);
CREATE UNIQUE INDEX erasure_jobs_one_open
    ON erasure_jobs (target_org, coalesce(contact_id, '')) WHERE status = 'pending';
CREATE TABLE org_retention (
    org_id      text NOT NULL REFERENCES organizations(id),
    data_class  text NOT NULL
                CHECK (data_class IN ('transcripts', 'chat_events', 'llm_calls', 'outbox_bodies')),
    days        integer NOT NULL CHECK (days >= 1),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, data_class)
);
CREATE FUNCTION colony_drop_org_indexes(org text) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_catalog AS $$
DECLARE
    idx regclass;
    dropped integer := 0;
BEGIN
    IF org IS NULL OR org !~ '^[A-Za-z0-9_.:-]{1,128}$' THEN
        RAISE EXCEPTION 'invalid org id';
    END IF;
    IF org IS DISTINCT FROM current_setting('app.org_id', true) THEN
        RAISE EXCEPTION 'only inside the org''s own scope' USING ERRCODE = '42501';
    END IF;
    FOR idx IN
        SELECT i.indexrelid::regclass FROM pg_index i
        WHERE i.indrelid = 'kc_chunks'::regclass AND i.indpred IS NOT NULL
          AND strpos(pg_get_expr(i.indpred, i.indrelid),
                     '(org_id = ' || quote_literal(org) || '::text)') > 0
    LOOP
        EXECUTE format('DROP INDEX %s', idx);
        dropped := dropped + 1;
    END LOOP;
    RETURN dropped;
END
$$;
CREATE FUNCTION colony_erase_rejections(org text) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_catalog AS $$
DECLARE
    gone integer;
BEGIN
    IF org IS NULL OR org IS DISTINCT FROM current_setting('app.org_id', true) THEN
        RAISE EXCEPTION 'only inside the org''s own scope' USING ERRCODE = '42501';
    END IF;
    DELETE FROM rejected_deliveries WHERE claimed_org_id = org;
    GET DIAGNOSTICS gone = ROW_COUNT;
    RETURN gone;
END
$$;
REVOKE ALL ON FUNCTION colony_drop_org_indexes(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION colony_erase_rejections(text) FROM PUBLIC;
"""

_HNSW = (
    "CREATE INDEX kc_chunks_hnsw_{suffix} ON kc_chunks "
    "USING hnsw (embedding vector_cosine_ops) WHERE domain = '{domain}';"
)


# Issue 14: every decision on an approval item and every side effect it caused, on the record.
# Append-only: the application role may INSERT and SELECT (under RLS) but never UPDATE,
# DELETE or TRUNCATE it (ensure_app_role_grants), so no bug and no compromised function can
# rewrite history. ``approval_item_id`` has no foreign key on purpose: the record of a refusal
# may name an item that does not exist. A link's nonce is unique: a link works once.
_AUDIT_LOG = """
CREATE TABLE audit_log (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    org_id            text NOT NULL REFERENCES organizations(id),
    at                timestamptz NOT NULL DEFAULT now(),
    event             text NOT NULL CHECK (event IN ('decision', 'effect', 'refusal')),
    approval_item_id  text,
    item_kind         text,
    actor             text NOT NULL,
    channel           text NOT NULL CHECK (channel IN ('ui', 'link', 'chat-confirmed', 'system')),
    action            text NOT NULL,
    reason            text,
    detail            jsonb NOT NULL DEFAULT '{}',
    link_nonce        text UNIQUE
);
CREATE INDEX audit_log_org_time ON audit_log (org_id, at DESC, id DESC);
CREATE INDEX audit_log_item ON audit_log (org_id, approval_item_id);
"""


# Issue 18: an approved message is sent by a durable step. ``sending`` holds a lease
# (``send_lease_until``): a duplicate task waits it out, a crashed send is retried after it
# with the same ``message_id``. ``suppressions`` lists, per org, the addresses no message may
# reach again (unsubscribed, hard-bounced, complained), checked at send time. It keeps a
# SHA-256 of the address, not the address: erasing a prospect leaves no address behind, and
# a re-import of them still cannot be mailed.
_SENDING = """
ALTER TABLE outbox DROP CONSTRAINT outbox_status_check;
ALTER TABLE outbox ADD CONSTRAINT outbox_status_check CHECK (status IN (
    'queued', 'sending', 'sent', 'delivered', 'bounced', 'complained', 'replied', 'blocked',
    'suppressed'));
ALTER TABLE outbox ADD COLUMN message_id text UNIQUE;
ALTER TABLE outbox ADD COLUMN to_address text;
ALTER TABLE outbox ADD COLUMN send_lease_until timestamptz;
ALTER TABLE outbox ADD COLUMN sent_at timestamptz;
ALTER TABLE outbox ADD COLUMN send_error text;
CREATE TABLE suppressions (
    org_id      text NOT NULL REFERENCES organizations(id),
    address     text NOT NULL CHECK (address ~ '^[0-9a-f]{64}$'),  -- sha256 of lower(address)
    reason      text NOT NULL CHECK (reason IN ('unsubscribed', 'bounced', 'complained')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, address)
);
"""


# The audit log is append-only for the application role, but an org's erasure (issue 14) must
# remove it too, and a prospect's erasure must redact them out of it. Only these two owner
# functions can, each only inside the org's own scope and only while an erasure job of the
# matching kind is open for it; jobs cannot be deleted by the application role (its grants,
# ``store.migrate``), so every removal of audit history leaves the job that asked for it
# (who, when) on the record.
_AUDIT_ERASURE = """
CREATE FUNCTION colony_erase_audit(org text) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_catalog AS $$
DECLARE
    gone integer;
BEGIN
    IF org IS NULL OR org IS DISTINCT FROM current_setting('app.org_id', true) THEN
        RAISE EXCEPTION 'only inside the org''s own scope' USING ERRCODE = '42501';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM erasure_jobs WHERE target_org = org AND contact_id IS NULL
                   AND status = 'pending') THEN
        RAISE EXCEPTION 'no open erasure job for this org' USING ERRCODE = '42501';
    END IF;
    DELETE FROM audit_log WHERE org_id = org;
    GET DIAGNOSTICS gone = ROW_COUNT;
    RETURN gone;
END
$$;
CREATE FUNCTION colony_redact_audit(org text, needles text[], redacted text) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_catalog AS $$
DECLARE
    needle text;
    changed integer := 0;
    n integer;
BEGIN
    IF org IS NULL OR org IS DISTINCT FROM current_setting('app.org_id', true) THEN
        RAISE EXCEPTION 'only inside the org''s own scope' USING ERRCODE = '42501';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM erasure_jobs WHERE target_org = org
                   AND contact_id IS NOT NULL AND status = 'pending') THEN
        RAISE EXCEPTION 'no open prospect erasure job for this org' USING ERRCODE = '42501';
    END IF;
    FOREACH needle IN ARRAY needles LOOP
        CONTINUE WHEN needle IS NULL OR needle = '';
        UPDATE audit_log SET
            approval_item_id = replace(approval_item_id, needle, redacted),
            actor = replace(actor, needle, redacted),
            reason = replace(reason, needle, redacted),
            detail = replace(detail::text, needle, redacted)::jsonb
        WHERE org_id = org AND (strpos(coalesce(approval_item_id, ''), needle) > 0
            OR strpos(actor, needle) > 0 OR strpos(coalesce(reason, ''), needle) > 0
            OR strpos(detail::text, needle) > 0);
        GET DIAGNOSTICS n = ROW_COUNT;
        changed := changed + n;
    END LOOP;
    RETURN changed;
END
$$;
REVOKE ALL ON FUNCTION colony_erase_audit(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION colony_redact_audit(text, text[], text) FROM PUBLIC;
"""


# Replies (issue 18 item 5): an inbound message matched to the outbox message it answers,
# its quoted history stripped (the text is untrusted: data, never instructions), with a
# deterministic sentiment (colony.policy.replies) and the angle of the message it answers,
# for the Knowledge Core's outcomes. One row per inbound Message-ID and org: a redelivered
# reply is stored once. A reply goes with its message (erasing a contact's messages erases
# their replies). One more way to see an outbox row answers the only question an inbound
# webhook (one per provider account) must ask before it knows the org: which org sent the
# message with this exact Message-ID. A transaction that sets ``app.message_lookup`` to it
# sees that one row (RLS policies are OR'ed), and nothing else, and cannot write through it.
_REPLIES = """
CREATE TABLE replies (
    id           text PRIMARY KEY DEFAULT gen_random_uuid()::text,
    org_id       text NOT NULL REFERENCES organizations(id),
    outbox_id    text NOT NULL REFERENCES outbox(id) ON DELETE CASCADE,
    contact_id   text REFERENCES contacts(id) ON DELETE CASCADE,
    deal_id      text REFERENCES deals(id) ON DELETE SET NULL,
    message_id   text NOT NULL CHECK (message_id <> ''),
    angle        text,
    body         text NOT NULL,
    sentiment    text NOT NULL CHECK (sentiment IN ('positive', 'negative', 'unknown')),
    received_at  timestamptz NOT NULL DEFAULT now(),
    created_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (org_id, message_id)
);
CREATE INDEX replies_org_time ON replies (org_id, received_at DESC);
CREATE INDEX replies_outbox ON replies (outbox_id);
CREATE POLICY message_lookup ON outbox FOR SELECT
    USING (message_id = current_setting('app.message_lookup', true));
"""


def _rls(table: str, key: str = "org_id") -> str:
    return (
        f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;\n"
        f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY;\n"
        f"CREATE POLICY org_isolation ON {table}\n"
        f"    USING ({key} = current_setting('app.org_id', true))\n"
        f"    WITH CHECK ({key} = current_setting('app.org_id', true));\n"
    )


# Org settings (issue 17): competitor names CONST-006 keeps out of outbound text and the
# sending limits (a daily cap, a per-recipient-domain hourly throttle), one row per org (an
# org without one has the defaults). Sequence steps (ENT-004) gain their channel and the
# name of the sequence they belong to (one named sequence per angle x tier).
_ORG_SETTINGS = """
CREATE TABLE org_settings (
    org_id                 text PRIMARY KEY REFERENCES organizations(id),
    competitors            jsonb NOT NULL DEFAULT '[]'::jsonb
                           CHECK (jsonb_typeof(competitors) = 'array'),
    daily_send_cap         integer NOT NULL DEFAULT 200
                           CHECK (daily_send_cap BETWEEN 0 AND 100000),
    per_domain_hourly_cap  integer NOT NULL DEFAULT 5
                           CHECK (per_domain_hourly_cap BETWEEN 0 AND 100000),
    updated_at             timestamptz NOT NULL DEFAULT now(),
    CHECK (per_domain_hourly_cap <= daily_send_cap)
);
ALTER TABLE sequences ADD COLUMN channel text NOT NULL DEFAULT 'email'
    CHECK (channel IN ('email', 'linkedin', 'call'));
ALTER TABLE sequences ADD COLUMN name text NOT NULL DEFAULT '';
"""


# Sequences (issue 18): one enrollment per (campaign, contact) walks the contact through the
# library's steps for the campaign's angle and tier. ``step`` is the latest step drafted; a
# reply, bounce, complaint or unsubscribe stops it (``stop_reason``), and every later step's
# task, draft and send reads it first. ``approved_by``: the person whose approval of step 1
# approved the whole sequence, when the org's settings say one approval covers it.
_SEQUENCES = """
CREATE TABLE sequence_enrollments (
    org_id        text NOT NULL REFERENCES organizations(id),
    campaign_id   text NOT NULL REFERENCES campaigns(id),
    contact_id    text NOT NULL REFERENCES contacts(id),
    run_id        text NOT NULL,
    angle         text NOT NULL,
    tier          text NOT NULL,
    steps         integer NOT NULL CHECK (steps >= 1),
    step          integer NOT NULL DEFAULT 1 CHECK (step BETWEEN 1 AND steps),
    status        text NOT NULL DEFAULT 'active'
                  CHECK (status IN ('active', 'completed', 'stopped')),
    stop_reason   text,
    approved_by   text,
    next_due_at   timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, campaign_id, contact_id)
);
CREATE INDEX sequence_enrollments_contact ON sequence_enrollments (org_id, contact_id);
ALTER TABLE outbox ADD COLUMN sequence_step integer NOT NULL DEFAULT 1 CHECK (sequence_step >= 1);
ALTER TABLE contacts ADD COLUMN timezone text;
ALTER TABLE audit_log DROP CONSTRAINT audit_log_channel_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_channel_check
    CHECK (channel IN ('ui', 'link', 'chat-confirmed', 'system', 'sequence'));
ALTER TABLE org_settings ADD COLUMN sequence_approval text NOT NULL DEFAULT 'each_step'
    CHECK (sequence_approval IN ('each_step', 'once'));
"""


# Connections (issue 17 items 4-5): Notion workspaces an org connected (several per
# deployment, each owned by one org; its token lives in Secret Manager, the row keeps only
# the secret's name), the backfill and reconciliation runs over their mapped databases (a
# cursor checkpoint per run, so a retried or rate-limited task resumes where it stopped),
# and Drive watch channels with their expiry. The Notion webhook knows only the event's
# workspace, not its org: a second, read-only policy lets a transaction that names one
# workspace (``app.notion_workspace``) read that one row, so it can route the event to its
# org; nothing lists workspaces across orgs, and nothing but the owning org writes them.
# The tables are in sql/0020_connections.sql (read as 0001 is).


# Schedules (issue 17): a Cloud Scheduler job serves every org (colony.registry.schedules),
# but the application role sees one org's rows at a time. This owner function lists, a page
# at a time and in id order, the ids of the live orgs one kind of schedule serves (all; with
# a connected Notion workspace; with an active Drive channel), leaving out an org whose
# erasure is open. Ids only: what each org's task then does runs inside its own scope.
# (sql/0026_scheduled_orgs.sql)


# Signals and tiers (issue 19 items 1-2): AGT-003's extracted signals, one row per contact and
# signal with where it was read (``source``), the words it rests on (``quote``) and the
# model's confidence; a re-enrichment replaces the contact's set. ``contacts.icp_tier`` is
# the tier policy decided for the contact's proposed score (colony.policy.tiering).
# Contacts gain a unique (org_id, id) so the signals' foreign key carries the org.
# (sql/0027_contact_signals.sql)


_NOTION_ROUTE = """
CREATE POLICY notion_route ON notion_workspaces FOR SELECT
    USING (workspace_id = current_setting('app.notion_workspace', true));
"""


_BOUNDED_HANDSHAKES = """
CREATE INDEX notion_verifications_received ON notion_verifications (received_at);
CREATE FUNCTION record_notion_verification(
    token text, at timestamptz, per_window integer, window_seconds integer, keep integer
) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(7243502);
    IF (SELECT count(*) FROM notion_verifications
        WHERE received_at > at - make_interval(secs => least(greatest(window_seconds, 1), 86400))
          AND received_at <= at) >= least(greatest(per_window, 1), 100) THEN
        RETURN false;
    END IF;
    INSERT INTO notion_verifications (verification_token, received_at) VALUES (token, at);
    DELETE FROM notion_verifications WHERE id NOT IN (
        SELECT id FROM notion_verifications ORDER BY id DESC LIMIT least(greatest(keep, 1), 100)
    );
    RETURN true;
END
$$;
"""


def migrations(dim: int) -> list[Migration]:
    """The ordered migration list; ``dim`` sizes the embedding column."""
    if not isinstance(dim, int) or not 1 <= dim <= 16000:
        raise ConfigError(f"embedding dimension {dim!r} must be an integer in 1..16000")
    hnsw = "\n".join(_HNSW.format(suffix=f"kc{n:02d}", domain=f"KC-{n:02d}") for n in range(1, 11))
    return [
        Migration("0001_core_entities", _core()),
        Migration("0002_knowledge_core", _KNOWLEDGE_CORE.format(dim=dim, hnsw=hnsw)),
        Migration(
            "0003_row_level_security",
            _rls("organizations", key="id") + "".join(_rls(t) for t in _RLS_0003),
        ),
        Migration(
            "0004_icp_tiers",
            "ALTER TABLE icp_definitions ADD COLUMN tiers jsonb NOT NULL DEFAULT '[]';",
        ),
        # Shared per-domain graphs are replaced by per-(org, domain) ones created when an org
        # is provisioned (colony.knowledge.indexes): a query then walks only its own org's rows.
        Migration(
            "0005_per_org_hnsw",
            "".join(f"DROP INDEX IF EXISTS kc_chunks_hnsw_kc{n:02d};\n" for n in range(1, 11)),
        ),
        Migration("0006_delivery_failures", _DELIVERY_FAILURES + _rls("dead_letters")),
        # A step is claimed (status 'running', with a lease) before its work starts, so a
        # concurrent duplicate delivery waits instead of repeating the LLM call.
        Migration(
            "0007_step_leases",
            "ALTER TABLE run_steps ALTER COLUMN output DROP NOT NULL;\n"
            "ALTER TABLE run_steps ADD COLUMN status text NOT NULL DEFAULT 'done'"
            " CHECK (status IN ('running', 'done'));\n"
            "ALTER TABLE run_steps ADD COLUMN claim text;\n"
            "ALTER TABLE run_steps ADD COLUMN lease_until timestamptz;\n",
        ),
        # When the breaker paused a campaign (names its resume task) and when it was last
        # resumed (rates are judged on what happened since).
        Migration(
            "0008_campaign_pauses",
            "ALTER TABLE campaigns ADD COLUMN paused_at timestamptz;\n"
            "ALTER TABLE campaigns ADD COLUMN resumed_at timestamptz;\n",
        ),
        # Chat (issue 5): every streamed event of a turn, numbered per session, so a client
        # that drops reconnects with Last-Event-ID; turns remember which request wrote them.
        Migration("0009_chat_events", _CHAT_EVENTS + _rls("chat_events")),
        # Knowledge pipelines (issue 6): how AGT-006 split a transcript (for the record and
        # the benchmark), and Notion verification handshakes kept for the operator (the token
        # is Notion's signing secret: it is stored, never logged; no org owns it yet).
        Migration(
            "0010_knowledge_pipelines",
            "ALTER TABLE recordings ADD COLUMN transcript_tokens integer;\n"
            "ALTER TABLE recordings ADD COLUMN chunk_count integer;\n"
            "ALTER TABLE recordings ADD COLUMN processed_at timestamptz;\n"
            "CREATE TABLE notion_verifications (\n"
            "    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,\n"
            "    verification_token  text NOT NULL,\n"
            "    received_at         timestamptz NOT NULL DEFAULT now()\n"
            ");\n",
        ),
        # Brief / content / onboarding (issue 7): content that an approved content_piece
        # published (the daily brief counts it), and one deployment kit per deal, its
        # document in GCS; the kit row and its approval item are written together.
        Migration(
            "0011_content_and_kits",
            "CREATE TABLE published_content (\n"
            "    id                text PRIMARY KEY DEFAULT gen_random_uuid()::text,\n"
            "    org_id            text NOT NULL REFERENCES organizations(id),\n"
            "    approval_item_id  text NOT NULL UNIQUE REFERENCES approval_items(id),\n"
            "    title             text NOT NULL,\n"
            "    format            text NOT NULL,\n"
            "    body              text NOT NULL,\n"
            "    published_at      timestamptz NOT NULL DEFAULT now()\n"
            ");\n"
            "CREATE INDEX published_content_org_time ON published_content (org_id, published_at);\n"
            "CREATE TABLE deployment_kits (\n"
            "    id                text PRIMARY KEY DEFAULT gen_random_uuid()::text,\n"
            "    org_id            text NOT NULL REFERENCES organizations(id),\n"
            "    deal_id           text NOT NULL REFERENCES deals(id),\n"
            "    approval_item_id  text NOT NULL UNIQUE REFERENCES approval_items(id),\n"
            "    title             text NOT NULL,\n"
            "    object_name       text NOT NULL,\n"
            "    gcs_uri           text NOT NULL,\n"
            "    status            text NOT NULL DEFAULT 'pending'\n"
            "                      CHECK (status IN ('pending', 'released')),\n"
            "    released_at       timestamptz,\n"
            "    created_at        timestamptz NOT NULL DEFAULT now(),\n"
            "    UNIQUE (org_id, deal_id)\n"
            ");\n" + _rls("published_content") + _rls("deployment_kits"),
        ),
        Migration("0012_audit_log", _AUDIT_LOG + _rls("audit_log")),
        Migration("0013_retention_and_erasure", _ERASURE + _rls("org_retention")),
        # Bounded handshakes (issue 14): the Notion verification endpoint is unauthenticated,
        # so what it may write is bounded here, in the one way in: at most ``per_window``
        # handshakes per window are stored (false: refused, the caller answers 429) and only
        # the newest ``keep`` rows are kept. Both bounds are clamped, so no argument lifts
        # them. SECURITY DEFINER because the application role may neither read these tokens
        # (they become signing secrets) nor insert around the bound (ensure_app_role_grants
        # revokes both); an advisory lock makes concurrent handshakes count one at a time.
        Migration("0014_bounded_notion_handshakes", _BOUNDED_HANDSHAKES),
        # Untrusted text stays data (issue 14 item 4): what the injection detector flagged in
        # a call's transcript, so every card drawn from the call (the follow-up too, which
        # never reads the transcript) can show it.
        Migration(
            "0015_recording_untrusted_instructions",
            "ALTER TABLE recordings\n"
            "    ADD COLUMN untrusted_instructions jsonb NOT NULL DEFAULT '[]'::jsonb;\n",
        ),
        Migration("0016_sending", _SENDING + _rls("suppressions")),
        Migration("0017_audit_erasure", _AUDIT_ERASURE),
        Migration("0018_org_settings", _ORG_SETTINGS + _rls("org_settings")),
        Migration(
            "0019_imports",
            (_SQL / "0019_imports.sql").read_text(encoding="utf-8")
            + _rls("import_jobs")
            + _rls("import_errors"),
        ),
        Migration(
            "0020_connections",
            (_SQL / "0020_connections.sql").read_text(encoding="utf-8")
            + "".join(_rls(t) for t in ("notion_workspaces", "notion_syncs", "drive_channels"))
            + _NOTION_ROUTE,
        ),
        Migration("0021_replies", _REPLIES + _rls("replies")),
        Migration("0022_sequences", _SEQUENCES + _rls("sequence_enrollments")),
        # Issue 16: kc_chunks partitioned by org (small orgs shared, large orgs alone with
        # their HNSW graphs), so planning and writes stop paying for every org's indexes.
        Migration(
            "0023_kc_tiers",
            (_SQL / "0023_kc_tiers.sql").read_text(encoding="utf-8").format(dim=dim)
            + _rls("kc_chunks")
            + _rls("kc_chunks_shared"),
        ),
        Migration(
            "0026_scheduled_orgs", (_SQL / "0026_scheduled_orgs.sql").read_text(encoding="utf-8")
        ),
        Migration(
            "0027_contact_signals",
            (_SQL / "0027_contact_signals.sql").read_text(encoding="utf-8")
            + _rls("contact_signals"),
        ),
        Migration(
            "0029_provenance",
            (_SQL / "0029_provenance.sql").read_text(encoding="utf-8") + _rls("kc_chunk_credits"),
        ),
        # Issue 16 item 4: org_id in every org-scoped key and foreign key, so the schema can be
        # distributed by org (Citus, AlloyDB) when one instance is outgrown (docs/scale.md).
        Migration("0033_org_keys", (_SQL / "0033_org_keys.sql").read_text(encoding="utf-8")),
        # Issue 15 item 4: a contact's missing data is an item on the approval queue.
        Migration(
            "0035_missing_data_items",
            (_SQL / "0035_missing_data_items.sql").read_text(encoding="utf-8"),
        ),
        # Issue 20 item 2: what a campaign funnel counts notifies colony_campaigns (the org's
        # id only), so /overview's funnels move live (colony.store.funnels).
        Migration(
            "0038_campaign_notify",
            (_SQL / "0038_campaign_notify.sql").read_text(encoding="utf-8"),
        ),
        # Issue 19 item 3: approved deployment kits (and the closed-won deal summary each one
        # opens with) grow KC-10; the kit keeps its text for the approval that adds it.
        Migration("0036_kc_learning", (_SQL / "0036_kc_learning.sql").read_text(encoding="utf-8")),
        # Issue 19 item 5: briefs and chat answers keep the id of the call that made them.
        Migration(
            "0037_output_calls", (_SQL / "0037_output_calls.sql").read_text(encoding="utf-8")
        ),
        # Issue 31: a Drive folder (and whatever else an org names outside our database) is
        # bound to the one org that proved it is theirs.
        Migration(
            "0039_resource_claims",
            (_SQL / "0039_resource_claims.sql").read_text(encoding="utf-8"),
        ),
        # Issue 31 item 4: a signed inbound-mail event the deployment cannot read yet is held,
        # not refused, and drained once a reader is configured (colony.flows.outbound.held_mail).
        Migration(
            "0040_held_inbound_mail",
            (_SQL / "0040_held_inbound_mail.sql").read_text(encoding="utf-8"),
        ),
    ]
