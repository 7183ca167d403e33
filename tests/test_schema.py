"""Migrations from a blank database, and the shape of what they build."""

from collections.abc import Callable

import pytest

from colony.errors import InternalError
from colony.knowledge.indexes import partition_name
from colony.knowledge.tiering import promote
from colony.store import ensure_app_role_grants, migrate
from colony.store.db import fetch_all, fetch_value
from colony.store.migrations import ORG_SCOPED_TABLES, migrations
from colony.store.tenants.erasure import delete_order, foreign_keys, org_delete_order, scoped_tables
from tests.conftest import APP_ROLE, PgDB

ENTITY_TABLES = {
    "organizations",  # ENT-001
    "contacts",  # ENT-002
    "deals",  # ENT-003
    "sequences",  # ENT-004
    "campaigns",  # ENT-005
    "campaign_runs",
    "run_steps",
    "recordings",  # ENT-006
    "kc_chunks",  # ENT-007, partitioned by org (issue 16)
    "kc_chunks_shared",  # its default partition: every org below the tiering threshold
    "chat_sessions",  # ENT-008
    "chat_turns",
    "chat_events",  # every streamed event of a turn, replayed on reconnect
    "daily_briefs",  # ENT-009
    "published_content",  # approved AGT-008 pieces, counted by the brief
    "deployment_kits",  # AGT-009 kits in GCS, one per closed-won deal
    "icp_definitions",  # ENT-010
    "approval_items",  # ENT-011
    "outbox",  # ENT-012
    "processed_events",
    "llm_calls",
    "dead_letters",
    "rejected_deliveries",
    "notion_verifications",  # issue 6: Notion handshake tokens (no org yet)
    "audit_log",  # issue 14: decisions, their effects and refusals, append-only
    "suppressions",  # issue 18: addresses no message may reach again, per org
    "sequence_enrollments",  # issue 18: where each contact is in its sequence
    "erasure_jobs",  # issue 14: erasure jobs and their reports (outlive the org they name)
    "org_retention",  # issue 14: an org's retention period per data class
    "org_settings",  # issue 17: competitors and sending limits, one row per org
    "replies",  # issue 18: replies to our messages, quoted history stripped (ENT-012)
    "notion_workspaces",  # issue 17: Notion workspaces an org connected (token in Secret Manager)
    "notion_syncs",  # issue 17: backfill / reconciliation runs and their checkpoints
    "drive_channels",  # issue 17: Drive watch channels and their expiry
    "contact_signals",  # issue 19: AGT-003's signals per contact, with provenance
    "import_jobs",  # issue 17: an uploaded prospect or deal file, its checkpoint and counts
    "import_errors",  # issue 17: each rejected record of an import, its number and reason
    "kc_chunk_credits",  # issue 19: outcomes credited to the chunks that grounded a call
    "resource_claims",  # issue 31: what an org proved is its own outside our database
    "held_inbound_mail",  # issue 31: inbound mail events held until a reader can read them
    "research_sites",  # issue 33: each site's pace across instances (no org: shared)
    "research_robots",  # issue 33: each origin's robots.txt as last fetched (no org: shared)
    "research_jobs",  # issue 33: each org's research of a company, resumable
    "research_sources",  # issue 33: what it fetched, with provenance
    "research_passages",  # issue 33: the stored texts' passages, embedded for AGT-003
    "crm_connections",  # issue 36: an org's CRM account (HubSpot), its token's secret name
    "crm_oauth_states",  # issue 36: OAuth flows in progress, bound to org and person
    "crm_writes",  # issue 36: what was written to the CRM under an idempotency key
    "crm_links",  # issue 36: which CRM record is which of ours, archived or merged ones
    "crm_stage_map",  # issue 36: the one editable mapping of CRM stages and our deal stages
    "crm_events",  # issue 36: CRM webhook events, kept until applied (idempotent on event id)
    "crm_rate_usage",  # issue 36: HubSpot's limits per portal across instances (no org)
    "org_members",  # issue 35: an org's people from Clerk, their role and address
    "org_team",  # issue 35: time zone, brief time, backup, escalation, assignment rules
    "assignment_cursors",  # issue 35: round robin's place in each pool of people
    "notify_settings",  # issue 35: an org's brief time and Slack workspace
    "notification_prefs",  # issue 35: each person's channel per kind
    "slack_users",  # issue 35: who a person is in Slack, as they set it
    "notification_events",  # issue 35: facts worth telling, from the flows' tables
    "notifications",  # issue 35: what is sent, once each
    "notification_items",  # issue 35: which event a notification carries for whom
    "crm_pushes",  # issue 36: what is written to an org's CRM, and what became of it
    "sending_domains",  # issue 39: an org's sending domains, their DKIM keys' names, checks
    "sender_mailboxes",  # issue 39: the mailboxes an org sends from, limits, ramps, grants
    "mailbox_oauth_states",  # issue 39: a mailbox's OAuth flow in progress (state hash)
    "llm_usage_daily",  # issue 38: each org's spend per day, agent, campaign and model
    "budget_alerts",  # issue 38: budget alerts, kept until a notification delivers them
    "budget_holds",  # issue 38: campaign work waiting while the budget is spent
    "rate_limits",  # issue 38: each shared limit and each waiting org's share (no org_id)
    "sender_pauses",  # issue 39: mailboxes and domains the breaker paused, until resumed
}


def test_blank_database_migrates_to_the_full_schema(make_db: Callable[..., PgDB]) -> None:
    db = make_db(dim=384, migrated=False)
    conn = db.owner_connection()
    applied = migrate(conn, dim=384)
    assert applied == [m.name for m in migrations(384)]
    cur = conn.cursor()
    tables = {
        r["table_name"]
        for r in fetch_all(
            cur, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
        )
    }
    assert ENTITY_TABLES | {"colony_migrations", "campaign_contacts"} == tables
    # the embedding column is sized by the configured dimension
    typmod = fetch_value(
        cur,
        "SELECT atttypmod FROM pg_attribute WHERE attrelid = 'kc_chunks'::regclass"
        " AND attname = 'embedding'",
    )
    assert typmod == 384
    # HNSW graphs live in large orgs' own partitions (issue 16): none yet
    indexes = fetch_all(cur, "SELECT indexname, indexdef FROM pg_indexes")
    assert not [i for i in indexes if "hnsw" in i["indexdef"]]
    cur.execute("INSERT INTO organizations (id, name) VALUES ('org_x', 'X')")
    conn.commit()
    ensure_app_role_grants(conn, APP_ROLE)
    app = db.app()
    assert promote(app, "org_x").moved
    assert not promote(app, "org_x").moved  # idempotent
    hnsw = [
        i["indexdef"]
        for i in fetch_all(
            cur, "SELECT indexdef FROM pg_indexes WHERE tablename = %s", (partition_name("org_x"),)
        )
        if "hnsw" in i["indexdef"]
    ]
    assert len(hnsw) == 10
    assert all("vector_cosine_ops" in d and "WHERE (domain = 'KC-" in d for d in hnsw)
    # a chat turn may be a summary, and nothing else outside the known roles
    check = fetch_value(
        cur,
        "SELECT pg_get_constraintdef(oid) FROM pg_constraint"
        " WHERE conrelid = 'chat_turns'::regclass AND contype = 'c'",
    )
    assert "'summary'" in check
    conn.commit()
    # migrating again applies nothing
    assert migrate(conn, dim=384) == []
    conn.close()


def test_every_org_table_has_forced_row_level_security(testdb: PgDB) -> None:
    conn = testdb.owner_connection()
    cur = conn.cursor()
    columns = fetch_all(
        cur,
        "SELECT c.table_name, p.relispartition FROM information_schema.columns c"
        " JOIN pg_class p ON p.relname = c.table_name AND p.relnamespace = 'public'::regnamespace"
        " WHERE c.table_schema = 'public' AND c.column_name = 'org_id'",
    )
    # a new org-scoped table that forgets to register for RLS fails here (a partition is
    # registered through its parent: kc_chunks)
    with_org = {r["table_name"] for r in columns if not r["relispartition"]}
    partitions = {r["table_name"] for r in columns if r["relispartition"]}
    assert with_org == set(ORG_SCOPED_TABLES)
    assert partitions == {"kc_chunks_shared"}
    rls = fetch_all(
        cur,
        "SELECT relname, relrowsecurity, relforcerowsecurity FROM pg_class"
        " WHERE relkind IN ('r', 'p') AND relnamespace = 'public'::regnamespace"
        " AND relname = ANY(%s)",
        (list(with_org | partitions | {"organizations"}),),
    )
    assert len(rls) == len(with_org) + len(partitions) + 1
    assert all(r["relrowsecurity"] and r["relforcerowsecurity"] for r in rls)
    conn.close()


def test_application_role_cannot_skip_rls(testdb: PgDB) -> None:
    conn = testdb.owner_connection()
    role = fetch_all(
        conn.cursor(),
        "SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = %s",
        (APP_ROLE,),
    )
    assert role == [{"rolsuper": False, "rolbypassrls": False}]
    owners = fetch_all(
        conn.cursor(),
        "SELECT DISTINCT tableowner FROM pg_tables WHERE schemaname = 'public'",
    )
    assert APP_ROLE not in {r["tableowner"] for r in owners}
    conn.close()


def test_every_table_referencing_an_org_table_is_org_scoped(testdb: PgDB) -> None:
    """Erasure deletes ``scoped_tables()``: a table with a foreign key into one of them (and
    so rows that would block its delete, or outlive it) must be registered too."""
    conn = testdb.owner_connection()
    edges = foreign_keys(conn.cursor())
    conn.close()
    scoped = set(scoped_tables())
    assert {child for child, parent in edges if parent in scoped} <= scoped


def test_the_erasure_order_deletes_children_before_parents(testdb: PgDB) -> None:
    conn = testdb.owner_connection()
    cur = conn.cursor()
    order = org_delete_order(cur)
    edges = foreign_keys(cur)
    conn.close()
    assert sorted(order) == sorted(scoped_tables())
    assert order[-1] == "organizations"
    position = {table: n for n, table in enumerate(order)}
    for child, parent in edges:
        if child in position and parent in position and child != parent:
            assert position[child] < position[parent], (child, parent)


def test_delete_order_is_stable_and_refuses_a_cycle() -> None:
    assert delete_order(["p", "c", "b"], [("c", "p"), ("b", "p")]) == ["b", "c", "p"]
    with pytest.raises(InternalError, match="cycle"):
        delete_order(["a", "b"], [("a", "b"), ("b", "a")])


# Ready to be distributed by org_id (issue 16 item 4): a distributed engine (Citus, AlloyDB)
# can only enforce a key that holds the distribution column, and only join along a foreign key
# that carries it. Generated from ORG_SCOPED_TABLES and the migrated catalog, so a table added
# later is checked without anyone editing this test. (Partitions inherit their parent's keys.)
_ORG_KEYS = """
SELECT t.relname AS tbl, c.conname AS name, c.contype AS kind,
       ARRAY(SELECT a.attname::text FROM unnest(c.conkey) WITH ORDINALITY k(n, i)
             JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n
             ORDER BY k.i) AS cols,
       c.confrelid::regclass::text AS parent,
       ARRAY(SELECT a.attname::text FROM unnest(c.confkey) WITH ORDINALITY k(n, i)
             JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n
             ORDER BY k.i) AS parent_cols
FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid
WHERE c.contype IN ('p', 'u', 'f') AND t.relname = ANY(%s) AND NOT t.relispartition
ORDER BY 1, 2
"""
# Unique indexes that back no constraint (a partial or expression index) are keys too.
_UNIQUE_INDEXES = """
SELECT t.relname AS tbl, ic.relname AS name,
       ARRAY(SELECT a.attname::text FROM unnest(i.indkey::int2[]) k(n)
             JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.n) AS cols
FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid JOIN pg_class ic ON ic.oid = i.indexrelid
WHERE i.indisunique AND t.relname = ANY(%s) AND NOT t.relispartition
  AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)
"""


def test_every_org_table_is_ready_to_be_distributed_by_org_id(testdb: PgDB) -> None:
    conn = testdb.owner_connection()
    cur = conn.cursor()
    tables = list(ORG_SCOPED_TABLES)
    keys = fetch_all(cur, _ORG_KEYS, (tables,))
    indexes = fetch_all(cur, _UNIQUE_INDEXES, (tables,))
    conn.close()
    assert {r["tbl"] for r in keys if r["kind"] == "p"} == set(tables)  # every one has a key
    wrong = [
        (r["tbl"], r["name"], r["cols"])
        for r in [*keys, *indexes]
        if r.get("kind", "u") in ("p", "u") and "org_id" not in r["cols"]
    ]
    for fk in (r for r in keys if r["kind"] == "f"):
        pairs = dict(zip(fk["cols"], fk["parent_cols"], strict=True))
        expected = "id" if fk["parent"] == "organizations" else "org_id"
        if pairs.get("org_id") != expected:
            wrong.append((fk["tbl"], fk["name"], f"{fk['cols']} -> {fk['parent']}"))
    assert wrong == []
