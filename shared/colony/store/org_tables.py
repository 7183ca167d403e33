"""Which tables belong to an org: the ones migration 0003 put under row-level security, and
every org-scoped table since (``ORG_SCOPED_TABLES``), which erasure deletes from and the
schema tests hold complete. ``colony.store.migrations`` gives each new one its policy."""

from __future__ import annotations

# Tables put under row-level security by migration 0003. Frozen: a migration's SQL must never
# change once it has run, so later tables get their policy in their own migration.
RLS_0003: tuple[str, ...] = (
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

# Migration 0054's tables (issue 35 item 3: notifications), each under row-level security.
NOTIFICATIONS_0054: tuple[str, ...] = (
    "notify_settings",
    "notification_prefs",
    "slack_users",
    "notification_events",
    "notifications",
    "notification_items",
)

# Every table whose rows belong to exactly one org through its ``org_id`` column
# (``organizations`` is scoped on its own ``id``); a schema test keeps this complete, and
# another holds each one ready to be distributed by org: ``org_id`` in its primary key and
# unique constraints, and in every foreign key to another of these tables (migration 0033).
ORG_SCOPED_TABLES: tuple[str, ...] = (
    *RLS_0003,
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
    "research_jobs",
    "research_sources",
    "research_passages",
    "crm_connections",
    "crm_oauth_states",
    "crm_writes",
    "crm_links",
    "crm_stage_map",
    "crm_events",
    "org_members",
    "org_team",
    "assignment_cursors",
    *NOTIFICATIONS_0054,
    "crm_pushes",
    "sending_domains",
    "sender_mailboxes",
    "mailbox_oauth_states",
    "llm_usage_daily",
    "budget_alerts",
    "budget_holds",
    "sender_pauses",
)
