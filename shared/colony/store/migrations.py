"""The registry of schema migrations: their names, their order, and why each one exists.

Append-only: never edit a migration that has shipped; append a new one. A migration's
statements are in ``sql/<name>.sql`` beside this module (a change of a line or two stays
inline), composed here with the row-level security each org-scoped table gets (``_rls``);
the comment beside an entry says why it exists. ``colony.store.migrator`` applies them, tracked
in ``colony_migrations``, by ``colony db migrate`` (and the local stack and the test fixtures)
as the owner role, never on a function's cold start.

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
from colony.store.org_tables import NOTIFICATIONS_0054, ORG_SCOPED_TABLES, RLS_0003

__all__ = ["ORG_SCOPED_TABLES", "Migration", "migrations"]


@dataclass(frozen=True, slots=True)
class Migration:
    """One named migration and its SQL."""

    name: str
    sql: str


_SQL = Path(__file__).with_name("sql")


def _sql(name: str) -> str:
    """The text of ``sql/<name>.sql``, as written (``str.format`` fills the two that hold
    ``{dim}``: 0002 and 0023)."""
    return (_SQL / f"{name}.sql").read_text(encoding="utf-8")


def _shipped_inline(name: str) -> str:
    """The text of a migration that first shipped as a triple-quoted string in this module,
    which began with a line break: its file starts at the first statement, and the break is
    put back here, so what runs on a blank database is byte for byte what shipped."""
    return "\n" + _sql(name)


def _rls(table: str, key: str = "org_id") -> str:
    return (
        f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;\n"
        f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY;\n"
        f"CREATE POLICY org_isolation ON {table}\n"
        f"    USING ({key} = current_setting('app.org_id', true))\n"
        f"    WITH CHECK ({key} = current_setting('app.org_id', true));\n"
    )


# 0002's shared per-domain HNSW indexes, one per KC domain (dropped again by 0005).
_HNSW = (
    "CREATE INDEX kc_chunks_hnsw_{suffix} ON kc_chunks "
    "USING hnsw (embedding vector_cosine_ops) WHERE domain = '{domain}';"
)


def migrations(dim: int) -> list[Migration]:
    """The ordered migration list; ``dim`` sizes the embedding column."""
    if not isinstance(dim, int) or not 1 <= dim <= 16000:
        raise ConfigError(f"embedding dimension {dim!r} must be an integer in 1..16000")
    hnsw = "\n".join(_HNSW.format(suffix=f"kc{n:02d}", domain=f"KC-{n:02d}") for n in range(1, 11))
    return [
        # The first schema is long enough to read best as SQL: it lives in its file, byte for
        # byte the text that shipped.
        Migration("0001_core_entities", _sql("0001_core_entities")),
        # ENT-007 Knowledge Core. ``{dim}`` is the configured embedding dimension (an int,
        # validated above); ``{{}}`` in the file is the JSON ``{}`` once formatted.
        #
        # How pgvector must be queried here: order by the raw ``<=>`` operator ascending with
        # a LIMIT, with the org and domain as *literals* so the planner can pick the matching
        # partial HNSW index. (The per-domain indexes made here were superseded by
        # per-(org, domain) ones in 0005, and those by per-org partitions in 0023; see
        # colony.knowledge.tiering.)
        Migration(
            "0002_knowledge_core",
            _shipped_inline("0002_knowledge_core").format(dim=dim, hnsw=hnsw),
        ),
        Migration(
            "0003_row_level_security",
            _rls("organizations", key="id") + "".join(_rls(t) for t in RLS_0003),
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
        # Messages that exhausted their delivery attempts (the local transport's dead-letter
        # topic), and pushes rejected as unrecoverable (bad payload): acknowledged, never
        # retried, recorded. Rejections keep ids and the reason only, never the payload (it may
        # hold another org's data), and the application role may insert them but not read them
        # (see ensure_app_role_grants).
        Migration(
            "0006_delivery_failures",
            _shipped_inline("0006_delivery_failures") + _rls("dead_letters"),
        ),
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
        # ``chat_sessions.last_seq`` hands out event ids (the row update also serialises
        # concurrent appends); ``chat_events`` keeps every SSE event for replay.
        Migration("0009_chat_events", _shipped_inline("0009_chat_events") + _rls("chat_events")),
        # Knowledge pipelines (issue 6): how AGT-006 split a transcript (for the record and
        # the benchmark), and Notion verification handshakes kept for the operator (the token
        # is Notion's signing secret: it is stored, never logged; no org owns it yet).
        Migration("0010_knowledge_pipelines", _sql("0010_knowledge_pipelines")),
        # Brief / content / onboarding (issue 7): content that an approved content_piece
        # published (the daily brief counts it), and one deployment kit per deal, its
        # document in GCS; the kit row and its approval item are written together.
        Migration(
            "0011_content_and_kits",
            _sql("0011_content_and_kits") + _rls("published_content") + _rls("deployment_kits"),
        ),
        # Issue 14: every decision on an approval item and every side effect it caused, on the
        # record. Append-only: the application role may INSERT and SELECT (under RLS) but
        # never UPDATE, DELETE or TRUNCATE it (ensure_app_role_grants), so no bug and no
        # compromised function can rewrite history. ``approval_item_id`` has no foreign key on
        # purpose: the record of a refusal may name an item that does not exist. A link's
        # nonce is unique: a link works once.
        Migration("0012_audit_log", _shipped_inline("0012_audit_log") + _rls("audit_log")),
        # Retention and erasure (issue 14 item 6). ``erasure_jobs`` is the durable record of an
        # org or data-subject erasure: it outlives the org (so it names it as ``target_org``,
        # not ``org_id``, and has no foreign key), keeps ids and the verification report, never
        # a name or an email. ``org_retention`` holds an org's own retention periods, each
        # within the deployment's limit (``Settings.retention_max_days``). Two SECURITY
        # DEFINER functions let the application role do exactly two owner-only things for one
        # org, and only inside that org's own scope (``app.org_id``): drop its per-org HNSW
        # indexes (an index can only be dropped by its table's owner) and delete the
        # rejections that claimed it (the application role may not read
        # ``rejected_deliveries``).
        Migration(
            "0013_retention_and_erasure",
            _shipped_inline("0013_retention_and_erasure") + _rls("org_retention"),
        ),
        # Bounded handshakes (issue 14): the Notion verification endpoint is unauthenticated,
        # so what it may write is bounded here, in the one way in: at most ``per_window``
        # handshakes per window are stored (false: refused, the caller answers 429) and only
        # the newest ``keep`` rows are kept. Both bounds are clamped, so no argument lifts
        # them. SECURITY DEFINER because the application role may neither read these tokens
        # (they become signing secrets) nor insert around the bound (ensure_app_role_grants
        # revokes both); an advisory lock makes concurrent handshakes count one at a time.
        Migration(
            "0014_bounded_notion_handshakes", _shipped_inline("0014_bounded_notion_handshakes")
        ),
        # Untrusted text stays data (issue 14 item 4): what the injection detector flagged in
        # a call's transcript, so every card drawn from the call (the follow-up too, which
        # never reads the transcript) can show it.
        Migration(
            "0015_recording_untrusted_instructions",
            "ALTER TABLE recordings\n"
            "    ADD COLUMN untrusted_instructions jsonb NOT NULL DEFAULT '[]'::jsonb;\n",
        ),
        # Issue 18: an approved message is sent by a durable step. ``sending`` holds a lease
        # (``send_lease_until``): a duplicate task waits it out, a crashed send is retried
        # after it with the same ``message_id``. ``suppressions`` lists, per org, the addresses
        # no message may reach again (unsubscribed, hard-bounced, complained), checked at send
        # time. It keeps a SHA-256 of the address, not the address: erasing a prospect leaves
        # no address behind, and a re-import of them still cannot be mailed.
        Migration("0016_sending", _shipped_inline("0016_sending") + _rls("suppressions")),
        # The audit log is append-only for the application role, but an org's erasure (issue
        # 14) must remove it too, and a prospect's erasure must redact them out of it. Only
        # these two owner functions can, each only inside the org's own scope and only while an
        # erasure job of the matching kind is open for it; jobs cannot be deleted by the
        # application role (its grants, ``store.migrator``), so every removal of audit history
        # leaves the job that asked for it (who, when) on the record.
        Migration("0017_audit_erasure", _shipped_inline("0017_audit_erasure")),
        # Org settings (issue 17): competitor names CONST-006 keeps out of outbound text and
        # the sending limits (a daily cap, a per-recipient-domain hourly throttle), one row per
        # org (an org without one has the defaults). Sequence steps (ENT-004) gain their
        # channel and the name of the sequence they belong to (one named sequence per angle x
        # tier).
        Migration("0018_org_settings", _shipped_inline("0018_org_settings") + _rls("org_settings")),
        Migration(
            "0019_imports", _sql("0019_imports") + _rls("import_jobs") + _rls("import_errors")
        ),
        # Connections (issue 17 items 4-5): Notion workspaces an org connected (several per
        # deployment, each owned by one org; its token lives in Secret Manager, the row keeps
        # only the secret's name), the backfill and reconciliation runs over their mapped
        # databases (a cursor checkpoint per run, so a retried or rate-limited task resumes
        # where it stopped), and Drive watch channels with their expiry. The Notion webhook
        # knows only the event's workspace, not its org: a second, read-only policy
        # (``0020_notion_route``, after the tables' own) lets a transaction that names one
        # workspace (``app.notion_workspace``) read that one row, so it can route the event to
        # its org; nothing lists workspaces across orgs, and nothing but the owning org writes
        # them.
        Migration(
            "0020_connections",
            _sql("0020_connections")
            + "".join(_rls(t) for t in ("notion_workspaces", "notion_syncs", "drive_channels"))
            + _shipped_inline("0020_notion_route"),
        ),
        # Replies (issue 18 item 5): an inbound message matched to the outbox message it
        # answers, its quoted history stripped (the text is untrusted: data, never
        # instructions), with a deterministic sentiment (colony.policy.replies) and the angle
        # of the message it answers, for the Knowledge Core's outcomes. One row per inbound
        # Message-ID and org: a redelivered reply is stored once. A reply goes with its message
        # (erasing a contact's messages erases their replies). One more way to see an outbox
        # row answers the only question an inbound webhook (one per provider account) must ask
        # before it knows the org: which org sent the message with this exact Message-ID. A
        # transaction that sets ``app.message_lookup`` to it sees that one row (RLS policies
        # are OR'ed), and nothing else, and cannot write through it.
        Migration("0021_replies", _shipped_inline("0021_replies") + _rls("replies")),
        # Sequences (issue 18): one enrollment per (campaign, contact) walks the contact
        # through the library's steps for the campaign's angle and tier. ``step`` is the latest
        # step drafted; a reply, bounce, complaint or unsubscribe stops it (``stop_reason``),
        # and every later step's task, draft and send reads it first. ``approved_by``: the
        # person whose approval of step 1 approved the whole sequence, when the org's settings
        # say one approval covers it.
        Migration(
            "0022_sequences", _shipped_inline("0022_sequences") + _rls("sequence_enrollments")
        ),
        # Issue 16: kc_chunks partitioned by org (small orgs shared, large orgs alone with
        # their HNSW graphs), so planning and writes stop paying for every org's indexes.
        Migration(
            "0023_kc_tiers",
            _sql("0023_kc_tiers").format(dim=dim) + _rls("kc_chunks") + _rls("kc_chunks_shared"),
        ),
        # Schedules (issue 17): a Cloud Scheduler job serves every org
        # (colony.registry.schedules), but the application role sees one org's rows at a time.
        # This owner function lists, a page at a time and in id order, the ids of the live orgs
        # one kind of schedule serves (all; with a connected Notion workspace; with an active
        # Drive channel), leaving out an org whose erasure is open. Ids only: what each org's
        # task then does runs inside its own scope.
        Migration("0026_scheduled_orgs", _sql("0026_scheduled_orgs")),
        # Signals and tiers (issue 19 items 1-2): AGT-003's extracted signals, one row per
        # contact and signal with where it was read (``source``), the words it rests on
        # (``quote``) and the model's confidence; a re-enrichment replaces the contact's set.
        # ``contacts.icp_tier`` is the tier policy decided for the contact's proposed score
        # (colony.policy.tiering). Contacts gain a unique (org_id, id) so the signals' foreign
        # key carries the org.
        Migration("0027_contact_signals", _sql("0027_contact_signals") + _rls("contact_signals")),
        Migration(
            "0029_provenance",
            _sql("0029_provenance") + _rls("kc_chunk_credits"),
        ),
        # Issue 16 item 4: org_id in every org-scoped key and foreign key, so the schema can be
        # distributed by org (Citus, AlloyDB) when one instance is outgrown (docs/scale.md).
        Migration("0033_org_keys", _sql("0033_org_keys")),
        # Issue 15 item 4: a contact's missing data is an item on the approval queue.
        Migration(
            "0035_missing_data_items",
            _sql("0035_missing_data_items"),
        ),
        # Issue 20 item 2: what a campaign funnel counts notifies colony_campaigns (the org's
        # id only), so /overview's funnels move live (colony.store.insights.funnels).
        Migration(
            "0038_campaign_notify",
            _sql("0038_campaign_notify"),
        ),
        # Issue 19 item 3: approved deployment kits (and the closed-won deal summary each one
        # opens with) grow KC-10; the kit keeps its text for the approval that adds it.
        Migration("0036_kc_learning", _sql("0036_kc_learning")),
        # Issue 19 item 5: briefs and chat answers keep the id of the call that made them.
        Migration("0037_output_calls", _sql("0037_output_calls")),
        # Issue 31: a Drive folder (and whatever else an org names outside our database) is
        # bound to the one org that proved it is theirs.
        Migration(
            "0039_resource_claims",
            _sql("0039_resource_claims"),
        ),
        # Issue 31 item 4: a signed inbound-mail event the deployment cannot read yet is held,
        # not refused, and drained once a reader is configured (colony.flows.outbound.held_mail).
        Migration(
            "0040_held_inbound_mail",
            _sql("0040_held_inbound_mail"),
        ),
        # Issue 33 item 2: the per-site pace (one request in flight, about one a second) and
        # each origin's robots.txt, held in the database so every research instance keeps them.
        Migration("0041_research_sites", _sql("0041_research_sites")),
        # Issue 33 items 1, 4 and 5: each org's research of a company (resumable), what it
        # fetched with its provenance, and the passages AGT-003 is given, embedded.
        Migration(
            "0042_research_sources",
            _sql("0042_research_sources").replace("{dim}", str(dim))
            + "".join(_rls(t) for t in ("research_jobs", "research_sources", "research_passages")),
        ),
        # Issue 33 item 4: a page that needs a browser, rendered: its screenshot's name and
        # hash, and what the render came to.
        Migration("0043_research_screenshots", _sql("0043_research_screenshots")),
        # Issue 33: the research-sweep schedule serves the orgs with a stalled research pass.
        Migration("0044_research_sweep", _sql("0044_research_sweep")),
        # Issue 39 item 3: an org's sending domains, their DKIM selector and public key (the
        # private key is in the secret store, by name here), what their last DNS check found,
        # and whether mail may go from them; the org's From address (org settings); and the
        # daily re-check's audience for the schedules' fan-out (0026's function, replaced).
        Migration("0045_sending_domains", _sql("0045_sending_domains") + _rls("sending_domains")),
        # Issue 36: an org's CRM connection (HubSpot through OAuth; tokens in Secret Manager),
        # the OAuth flows in progress (state bound to org and person), and what was written
        # to the CRM under an idempotency key.
        Migration(
            "0046_crm_connections",
            _sql("0046_crm_connections")
            + "".join(_rls(t) for t in ("crm_connections", "crm_oauth_states", "crm_writes")),
        ),
        # Issue 39 item 1: sequence steps as written: LinkedIn and call steps are tasks for a
        # person ('sequence_task' items), the tier whose library sequence a contact walks, and
        # no negative delay.
        Migration("0047_sequence_steps", _sql("0047_sequence_steps")),
        # Issue 38 item 2: each call's cost, cached tokens and campaign; an org's spend per
        # day, its budget, the alerts it raised and the campaign work held while it is spent.
        Migration(
            "0048_costs_and_budgets",
            _sql("0048_costs_and_budgets")
            + "".join(_rls(t) for t in ("llm_usage_daily", "budget_alerts", "budget_holds")),
        ),
        # Issue 36: which CRM record is which of ours (contacts, companies, deals), the CRM's
        # updatedAt last applied, and records deleted or merged in the CRM.
        Migration("0049_crm_links", _sql("0049_crm_links") + _rls("crm_links")),
        # Issue 35: the people of an org (from Clerk), their role, their address, and
        # whether they are still in it.
        Migration("0050_org_members", _sql("0050_org_members") + _rls("org_members")),
        # Issue 34 item 2: documents a person writes in the Knowledge Core editor.
        Migration("0051_kc_editor", _sql("0051_kc_editor")),
        # Issue 39 item 2: sender mailboxes, their OAuth flows, each message's mailbox and day.
        Migration(
            "0052_sender_mailboxes",
            _sql("0052_sender_mailboxes") + _rls("sender_mailboxes") + _rls("mailbox_oauth_states"),
        ),
        # Issue 35: owners of prospects and deals, whose queue an item waits in, the org's
        # time zone, backup and assignment rules, and the local-time brief and escalation
        # schedules' audiences.
        Migration(
            "0053_ownership",
            _sql("0053_ownership") + _rls("org_team") + _rls("assignment_cursors"),
        ),
        # Issue 35 item 3: notifications where people are: each person's choice per kind,
        # their Slack identity, the org's brief time and Slack workspace, the events the
        # flows' own tables record (triggers), the notifications sent once each, and the
        # ``notify`` schedule's audience (0048's lister, every audience kept).
        Migration(
            "0054_notifications",
            _sql("0054_notifications") + "".join(_rls(t) for t in NOTIFICATIONS_0054),
        ),
        # Issue 36: CRM pushes and their outcomes, the stage mapping, the conflict card.
        Migration("0055_crm_write_back", _sql("0055_crm_write_back")),  # RLS in its file
        # Issue 38 item 1: each shared limit, its AIMD factor and each waiting org's share.
        Migration("0056_rate_limits", _sql("0056_rate_limits")),
        # Issue 39 item 4: bounces recorded as codes and classes, soft bounces counted,
        # rates per sending mailbox and domain, the breaker per sender, a campaign's pause
        # waiting for a person, and the org's postal address for the footer.
        Migration("0057_deliverability", _sql("0057_deliverability") + _rls("sender_pauses")),
        # Issue 36 inbound: the stage mapping made editable, backfill jobs, webhook events,
        # HubSpot's limits (see its file).
        Migration("0058_crm_sync", _sql("0058_crm_sync")),  # its RLS is in its file
        # Issue 35 item 1: a mailbox may be a person's (its contacts' first mail goes from it).
        Migration("0059_mailbox_owners", _sql("0059_mailbox_owners")),
    ]
