"""Two orgs with a row in every org-scoped table, objects in the bucket and traces in
Langfuse, and the schema-generated dumps and scans the erasure tests compare.

``seed_org`` writes, for one org, everything an org accumulates: its ICP, two contacts
(``c1`` "Dana Whitfield", the data subject; ``c2``, kept), a deal each, a campaign with both,
durable steps, a recording of each deal's call (transcript in GCS), KC chunks (a seed one and
one approved from each call), chat turns and events that mention Dana, a brief, approval
items (outbound drafts, a follow-up, a KC candidate, a kit, a content piece), the outbox,
processed events, LLM call records, a dead letter, published content, a deployment kit,
retention and org settings, both contacts' sequence enrollments, a Notion workspace and its
backfill run, a Drive channel, an import job with a rejected row quoting Dana's address, a
rejection that claimed it, both contacts' AGT-003 signals, audit log entries about Dana's
draft, Dana's address on the suppression list, and the research of the org's company
(a stored leadership page naming Dana, an about page that does not). ``SEEDED`` lists the
tables it fills and a test holds that to ``ORG_SCOPED_TABLES``: a new org table must be
seeded here, so the erasure tests cover it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from colony.ports import BlobStore
from colony.store.db import fetch_all
from colony.store.migrations import ORG_SCOPED_TABLES
from colony.store.tenants.erasure import searchable_columns

SEEDED = {*ORG_SCOPED_TABLES, "organizations"}


@dataclass(frozen=True)
class Seeded:
    org: str
    dana: str  # the data subject's contact id
    dana_email: str
    dana_name: str
    other: str  # another contact of the same org, kept
    objects: tuple[str, ...]


def _vector(dim: int, n: int) -> str:
    return "[" + ",".join("1" if i == n % dim else "0" for i in range(dim)) + "]"


def seed_org(conn: Any, blobs: BlobStore, org: str, dim: int) -> Seeded:
    """Write one org's data (owner connection; committed)."""
    dana, other = f"{org}_c1", f"{org}_c2"
    email, name = f"dana.whitfield@{org}.example", "Dana Whitfield"
    d1, d2, r1, r2 = f"{org}_d1", f"{org}_d2", f"{org}_r1", f"{org}_r2"
    t1, t2 = f"transcripts/{org}/f1.txt", f"transcripts/{org}/f2.txt"
    kit, imported = f"deployment-kits/{org}/{d2}.md", f"imports/{org}/contacts.csv"
    bucket = blobs.bucket
    blobs.put(t1, f"call with {name} <{email}>".encode(), "text/plain")
    blobs.put(t2, b"call with Rob Kessler", "text/plain")
    blobs.put(kit, b"# kit", "text/markdown")
    blobs.put(imported, f"name,email\n{name},{email}\n".encode(), "text/csv")
    items = {k: f"{org}_i_{k}" for k in ("out1", "out2", "follow", "kc1", "kc2", "kit", "piece")}
    cur = conn.cursor()
    run = f"{org}_run"
    research_objects: list[str] = []

    def ex(sql: str, *params: Any) -> None:
        cur.execute(sql, params)

    ex("INSERT INTO organizations (id, name) VALUES (%s, %s)", org, f"Org {org}")
    ex(
        "INSERT INTO icp_definitions (org_id, description, rubric) VALUES (%s, %s, %s)",
        org,
        "health systems",
        json.dumps({"fit": 1}),
    )
    for cid, cname, cemail in ((dana, name, email), (other, "Rob Kessler", f"rob@{org}.example")):
        ex(
            "INSERT INTO contacts (id, org_id, name, email, company, signals, enrichment)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s)",
            cid,
            org,
            cname,
            cemail,
            "Mercy Ridge",
            json.dumps([{"signal": f"{cname} changed roles"}]),
            json.dumps({"linkedin": f"https://example.com/{cid}"}),
        )
    for deal, contact in ((d1, dana), (d2, other)):
        ex(
            "INSERT INTO deals (id, org_id, contact_id, name, stage) VALUES (%s, %s, %s, %s, %s)",
            deal,
            org,
            contact,
            f"Mercy Ridge {deal}",
            "discovery",
        )
    ex(
        "INSERT INTO sequences (org_id, angle, tier, step, guidance) VALUES (%s, %s, %s, %s, %s)",
        org,
        "Signal",
        "T1",
        1,
        "lead with the signal",
    )
    ex(
        "INSERT INTO campaigns (id, org_id, name, angle, tier) VALUES (%s, %s, %s, %s, %s)",
        f"{org}_camp",
        org,
        "Q4",
        "Signal",
        "T1",
    )
    for contact in (dana, other):
        ex(
            "INSERT INTO campaign_contacts (org_id, campaign_id, contact_id) VALUES (%s, %s, %s)",
            org,
            f"{org}_camp",
            contact,
        )
    ex(
        "INSERT INTO campaign_runs (id, org_id, campaign_id) VALUES (%s, %s, %s)",
        run,
        org,
        f"{org}_camp",
    )
    for key, output in (
        (f"qualify:{dana}", {"contact_id": dana, "score": 80}),
        (f"qualify:{other}", {"contact_id": other, "score": 60}),
    ):
        ex(
            "INSERT INTO run_steps (org_id, run_id, step_key, output) VALUES (%s, %s, %s, %s)",
            org,
            run,
            key,
            json.dumps(output),
        )
    ex(
        "INSERT INTO run_steps (org_id, run_id, step_key, output) VALUES (%s, %s, %s, %s)",
        org,
        f"rec:{r1}",
        "pass2",
        json.dumps({"executive_summary": "budget approved"}),
    )
    for rec, deal, uri in ((r1, d1, t1), (r2, d2, t2)):
        ex(
            "INSERT INTO recordings (id, org_id, deal_id, title, transcript_uri, summary)"
            " VALUES (%s, %s, %s, %s, %s, %s)",
            rec,
            org,
            deal,
            f"Discovery {deal}",
            f"gs://{bucket}/{uri}",
            "they want a pilot",
        )
    approvals = (
        ("out1", "outbound_message", dana, {"contact_id": dana, "to": email, "body": "Hi Dana"}),
        ("out2", "outbound_message", other, {"contact_id": other, "body": "Hi Rob"}),
        ("follow", "follow_up", dana, {"recording_id": r1, "contact_id": dana, "to": email}),
        ("kc1", "kc_update_candidate", r1, {"domain": "KC-09", "source": {"recording_id": r1}}),
        ("kc2", "kc_update_candidate", r2, {"domain": "KC-09", "source": {"recording_id": r2}}),
        ("kit", "deployment_kit", d2, {"deal_id": d2}),
        ("piece", "content_piece", None, {"title": "Lease costs"}),
    )
    for key, kind, subject, payload in approvals:
        ex(
            "INSERT INTO approval_items (id, org_id, kind, source_agent, subject_id, payload)"
            " VALUES (%s, %s, %s, %s, %s, %s)",
            items[key],
            org,
            kind,
            "AGT-005",
            subject,
            json.dumps(payload),
        )
    chunks = (
        ("seed", f"{org}-kc01", {}, "our product"),
        ("approval", items["kc1"], {"recording_id": r1}, "buyers ask for pilots"),
        ("approval", items["kc2"], {"recording_id": r2}, "buyers compare vendors"),
    )
    for n, (source, source_id, tags, content) in enumerate(chunks):
        ex(
            "INSERT INTO kc_chunks (org_id, domain, source, source_id, chunk_index, content,"
            " content_hash, tags, embedding_model, embedding)"
            " VALUES (%s, 'KC-09', %s, %s, 0, %s, %s, %s, 'offline', %s::vector)",
            org,
            source,
            source_id,
            content,
            f"h{n}",
            json.dumps(tags),
            _vector(dim, n),
        )
    session = f"{org}_s1"
    ex(
        "INSERT INTO chat_sessions (id, org_id, user_id, last_seq) VALUES (%s, %s, %s, 2)",
        session,
        org,
        "user_1",
    )
    ex(
        "INSERT INTO chat_turns (org_id, session_id, role, content) VALUES (%s, %s, %s, %s)",
        org,
        session,
        "user",
        f"Draft a note to {name} ({email}) about the pilot",
    )
    ex(
        "INSERT INTO chat_turns (org_id, session_id, role, content) VALUES (%s, %s, %s, %s)",
        org,
        session,
        "assistant",
        "Rob Kessler replied yesterday",
    )
    for seq, data in ((1, {"text": f"{name} asked for pricing", "contact_id": dana}), (2, {})):
        ex(
            "INSERT INTO chat_events (org_id, session_id, seq, turn_id, type, data)"
            " VALUES (%s, %s, %s, 't1', 'delta', %s)",
            org,
            session,
            seq,
            json.dumps(data),
        )
    ex(
        "INSERT INTO daily_briefs (org_id, brief_date, content) VALUES (%s, '2026-11-29', %s)",
        org,
        f"Follow up with {name}; Rob Kessler is waiting",
    )
    for item, contact in ((items["out1"], dana), (items["out2"], other)):
        ex(
            "INSERT INTO outbox (org_id, approval_item_id, campaign_id, contact_id, subject, body)"
            " VALUES (%s, %s, %s, %s, %s, %s)",
            org,
            item,
            f"{org}_camp",
            contact,
            "Pilot",
            "Hello",
        )
    for contact in (dana, other):  # both mid-sequence
        ex(
            "INSERT INTO sequence_enrollments (org_id, campaign_id, contact_id, run_id, angle,"
            " tier, steps) VALUES (%s, %s, %s, %s, 'Signal', 'T1', 2)",
            org,
            f"{org}_camp",
            contact,
            f"{org}_run",
        )
    # AGT-003's signals for both contacts, Dana's quoting her name (her erasure takes hers)
    for contact, quote in ((dana, f"{name} is opening two sites"), (other, "Hiring 3 planners")):
        ex(
            "INSERT INTO contact_signals (org_id, contact_id, signal_key, type, detail, quote,"
            " source, confidence, run_id) VALUES (%s, %s, %s, 'expansion', %s, %s,"
            " 'contact.signals[0]', 0.9, %s)",
            org,
            contact,
            f"{contact}_s1",
            quote,
            quote,
            f"{org}_run",
        )
    # Dana's reply to her message, with her name in it (a contact's erasure takes it)
    ex(
        "INSERT INTO replies (org_id, outbox_id, contact_id, message_id, body, sentiment)"
        " SELECT org_id, id, contact_id, %s, %s, 'positive' FROM outbox"
        " WHERE approval_item_id = %s",
        f"<reply-{org}@{org}.example>",
        f"Yes, let's talk. {name}",
        items["out1"],
    )
    ex(
        "INSERT INTO processed_events (org_id, handler, event_id) VALUES (%s, %s, %s)",
        org,
        "qualification",
        f"{org}-evt-1",
    )
    ex(
        "INSERT INTO llm_calls (org_id, agent_id, run_id, model, tokens_in, tokens_out, call_id,"
        " provenance) VALUES (%s, 'AGT-004', %s, 'offline', 10, 5, %s, %s::jsonb)",
        org,
        run,
        f"{org}-call-1",
        json.dumps({"chunks": [{"id": 1, "domain": "KC-08", "content_hash": "h1"}]}),
    )
    ex(
        "INSERT INTO kc_chunk_credits (org_id, call_id, chunk_id, content_hash, domain, outcome)"
        " VALUES (%s, %s, 1, 'h1', 'KC-08', 'replied_positive')",
        org,
        f"{org}-call-1",
    )
    ex(
        "INSERT INTO dead_letters (org_id, topic, message_id, data, attempts, last_error)"
        " VALUES (%s, 'colony-enrichment', %s, %s, 5, 'boom')",
        org,
        f"{org}-m1",
        json.dumps({"contact_email": email}),
    )
    ex(
        "INSERT INTO published_content (org_id, approval_item_id, title, format, body)"
        " VALUES (%s, %s, 'Lease costs', 'post', 'body')",
        org,
        items["piece"],
    )
    ex(
        "INSERT INTO deployment_kits (org_id, deal_id, approval_item_id, title, object_name,"
        " gcs_uri) VALUES (%s, %s, %s, 'Kit', %s, %s)",
        org,
        d2,
        items["kit"],
        kit,
        f"gs://{bucket}/{kit}",
    )
    ex(
        "INSERT INTO org_retention (org_id, data_class, days) VALUES (%s, 'chat_events', 30)",
        org,
    )
    ex(
        "INSERT INTO org_settings (org_id, competitors, daily_send_cap, per_domain_hourly_cap)"
        " VALUES (%s, '[\"CareSpace\"]'::jsonb, 100, 4)",
        org,
    )
    # a connected Notion workspace, its backfill run, and a Drive watch channel
    ex(
        "INSERT INTO notion_workspaces (workspace_id, org_id, secret_name, domains)"
        " VALUES (%s, %s, %s, '{}'::jsonb)",
        f"ws-{org}",
        org,
        f"colony-notion-{org}",
    )
    ex(
        "INSERT INTO notion_syncs (id, org_id, workspace_id, kind, targets)"
        " VALUES (%s, %s, %s, 'backfill', '[]'::jsonb)",
        f"bf-{org}",
        org,
        f"ws-{org}",
    )
    ex(
        "INSERT INTO drive_channels (id, org_id, folder_id, resource_id, expires_at)"
        " VALUES (%s, %s, %s, %s, now() + interval '1 day')",
        f"ch-{org}",
        org,
        f"folder-{org}",
        f"res-{org}",
    )
    cur.execute("SELECT to_regclass('resource_claims') IS NOT NULL")
    if cur.fetchone()[0]:  # migration 0039 (tests/test_org_keys.py seeds before 0033)
        ex(
            "INSERT INTO resource_claims (org_id, kind, resource_id, method, claimed_by)"
            " VALUES (%s, 'drive_folder', %s, 'marker', 'user_1')",
            org,
            f"folder-{org}",
        )
    cur.execute("SELECT to_regclass('sending_domains') IS NOT NULL")
    if cur.fetchone()[0]:  # migration 0045: a sending domain, its DKIM key's secret by name
        ex(
            "INSERT INTO sending_domains (org_id, domain, selector, public_key, key_secret,"
            " status, added_by, verified_at) VALUES (%s, %s, 'colony0a1b2c3d', %s, %s,"
            " 'verified', 'user_1', now())",
            org,
            f"{org.replace('_', '-')}.example",
            "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA" + "b" * 300,
            f"colony-dkim-{org}",
        )
    cur.execute("SELECT to_regclass('sender_mailboxes') IS NOT NULL")
    if cur.fetchone()[0]:  # migration 0052: a connected Gmail mailbox, a grant flow begun
        ex(
            "INSERT INTO sender_mailboxes (org_id, id, address, domain, display_name, kind,"
            " daily_limit, grant_status, grant_secret, created_by) VALUES (%s, %s, %s, %s,"
            " 'Ada', 'gmail', 40, 'connected', %s, 'user_1')",
            org,
            f"mb-{org}",
            f"ada@{org.replace('_', '-')}.example",
            f"{org.replace('_', '-')}.example",
            f"colony-mailbox-{org}",
        )
        ex(
            "INSERT INTO mailbox_oauth_states (org_id, state_hash, mailbox_id, user_id,"
            " expires_at) VALUES (%s, %s, %s, 'user_1', now() + interval '10 minutes')",
            org,
            "1" * 64,
            f"mb-{org}",
        )
    cur.execute("SELECT to_regclass('crm_connections') IS NOT NULL")
    if cur.fetchone()[0]:  # migration 0046: a HubSpot connection, a flow begun, a logged email
        ex(
            "INSERT INTO crm_connections (org_id, provider, account_id, status, secret_name,"
            " connected_by) VALUES (%s, 'hubspot', %s, 'connected', %s, 'user_1')",
            org,
            f"portal-{org}",
            f"colony-crm-{org}",
        )
        ex(
            "INSERT INTO crm_oauth_states (org_id, state_hash, provider, user_id, expires_at)"
            " VALUES (%s, %s, 'hubspot', 'user_1', now() + interval '10 minutes')",
            org,
            "0" * 64,
        )
        ex(
            "INSERT INTO crm_writes (org_id, provider, idempotency_key, kind, remote_id)"
            " VALUES (%s, 'hubspot', %s, 'email', '70001')",
            org,
            f"outbox:{org}",
        )
    cur.execute("SELECT to_regclass('org_members') IS NOT NULL")
    if cur.fetchone()[0]:  # migration 0050: a person of the org, with their address
        ex(
            "INSERT INTO org_members (org_id, user_id, role, email, name)"
            " VALUES (%s, 'user_1', 'org:admin', %s, %s)",
            org,
            f"{name.split()[0].lower()}@example.com",
            name,
        )
    cur.execute("SELECT to_regclass('org_team') IS NOT NULL")
    if cur.fetchone()[0]:  # migration 0053: owners, the team's settings, round robin's place
        ex("UPDATE contacts SET owner_id = 'user_1' WHERE org_id = %s", org)
        ex("UPDATE deals SET owner_id = 'user_1' WHERE org_id = %s", org)
        cur.execute(
            "SELECT 1 FROM information_schema.columns"
            " WHERE table_name = 'sender_mailboxes' AND column_name = 'user_id'"
        )
        if cur.fetchone():  # migration 0059: the mailbox is the person's
            ex("UPDATE sender_mailboxes SET user_id = 'user_1' WHERE org_id = %s", org)
        ex(
            "INSERT INTO org_team (org_id, time_zone, backup_user_id) VALUES (%s,"
            " 'Europe/Berlin', 'user_1')",
            org,
        )
        ex(
            "INSERT INTO assignment_cursors (org_id, pool, last_user_id) VALUES (%s, 'pool:x',"
            " 'user_1')",
            org,
        )
    cur.execute("SELECT to_regclass('notification_items') IS NOT NULL")
    if cur.fetchone()[0]:  # migration 0054: a person's choices and Slack id, an event told
        ex(
            "INSERT INTO notify_settings (org_id, slack_team_id, slack_token_secret)"
            " VALUES (%s, 'T0SEED', 'slack-seed')",
            org,
        )
        ex(
            "INSERT INTO notification_prefs (org_id, user_id, kind, channel)"
            " VALUES (%s, 'user_1', 'positive_reply', 'slack')",
            org,
        )
        ex(
            "INSERT INTO slack_users (org_id, user_id, slack_user_id)"
            " VALUES (%s, 'user_1', 'U0SEED')",
            org,
        )
        ex(
            "INSERT INTO notification_events (org_id, kind, event_key, subject, link, contact_id)"
            " SELECT org_id, 'positive_reply', 'seed-1', 'Reply: a note for ' || name,"
            " '/overview#reply-seed', id FROM contacts WHERE org_id = %s ORDER BY id LIMIT 1",
            org,
        )
        ex(
            "INSERT INTO notifications (org_id, user_id, channel, kind, dedupe_key, due_at)"
            " VALUES (%s, 'user_1', 'slack', 'positive_reply', 'slack:user_1:seed-1', now())",
            org,
        )
        ex(
            "INSERT INTO notification_items (org_id, notification_id, event_id, user_id, kind)"
            " SELECT n.org_id, n.id, e.id, 'user_1', e.kind FROM notifications n"
            " JOIN notification_events e ON e.org_id = n.org_id AND e.event_key = 'seed-1'"
            " WHERE n.org_id = %s",
            org,
        )
    cur.execute("SELECT to_regclass('sender_pauses') IS NOT NULL")
    if cur.fetchone()[0]:  # migration 0057: a sending domain the breaker paused
        ex(
            "INSERT INTO sender_pauses (org_id, scope, sender, status, reason, judged,"
            " bounce_rate, complaint_rate, paused_at) VALUES (%s, 'domain', %s, 'paused',"
            " 'bounce rate over threshold', 100, 0.09, 0, now())",
            org,
            f"{org.replace('_', '-')}.example",
        )
    cur.execute("SELECT to_regclass('crm_links') IS NOT NULL")
    if cur.fetchone()[0]:  # migration 0049: a HubSpot contact linked to the org's contact
        ex(
            "INSERT INTO crm_links (org_id, provider, object_type, remote_id, entity_id)"
            " SELECT org_id, 'hubspot', 'contact', '1001', id FROM contacts WHERE org_id = %s"
            " ORDER BY id LIMIT 1",
            org,
        )
    cur.execute("SELECT to_regclass('crm_pushes') IS NOT NULL")
    if cur.fetchone()[0]:  # migration 0055: a sent email logged in HubSpot
        ex(
            "INSERT INTO crm_pushes (org_id, provider, kind, source_id, status, remote_id)"
            " VALUES (%s, 'hubspot', 'email', %s, 'written', '70001')",
            org,
            f"outbox-{org}",
        )
    cur.execute("SELECT to_regclass('crm_events') IS NOT NULL")
    if cur.fetchone()[0]:  # migration 0058: a stage mapped (as 0058 keys it), an event kept
        ex(
            "INSERT INTO crm_stage_map (org_id, provider, pipeline_id, stage_id, stage,"
            " updated_by) VALUES (%s, 'hubspot', 'default', 'closedwon', 'closed_won', 'u1')",
            org,
        )
        ex(
            "INSERT INTO crm_events (org_id, provider, event_id, object_type, object_id, action,"
            " occurred_at) VALUES (%s, 'hubspot', '1', 'contact', '1001', 'change', now())",
            org,
        )
    cur.execute("SELECT to_regclass('research_sources') IS NOT NULL")
    if cur.fetchone()[0]:  # migration 0042: the company's research, a page naming Dana
        ex(
            "INSERT INTO research_jobs (org_id, domain, status, outcome, requested_by,"
            " finished_at) VALUES (%s, 'mercyridge.example', 'done', 'researched', 'u1', now())",
            org,
        )
        for sid, role, text in (
            (f"{org[-12:]:0>12}aaaaaaaaaaaa", "leadership", f"{name}, VP Facilities"),
            (f"{org[-12:]:0>12}bbbbbbbbbbbb", "about", "Mercy Ridge runs nine clinics."),
        ):
            sid = "".join(c if c in "0123456789abcdef" else "0" for c in sid)
            text_object = f"research/{org}/{sid}/page.txt"
            blobs.put(text_object, text.encode(), "text/plain")
            research_objects.append(text_object)
            ex(
                "INSERT INTO research_sources (org_id, id, domain, url, final_url, role, kind,"
                " outcome, fetched_at, text_object, text_chars, pass) VALUES (%s, %s,"
                " 'mercyridge.example', %s, %s, %s, 'page', 'ok', now(), %s, %s, 1)",
                org,
                sid,
                f"https://mercyridge.example/{role}",
                f"https://mercyridge.example/{role}",
                role,
                text_object,
                len(text),
            )
            if role == "leadership" and _has_column(cur, "research_sources", "screenshot_object"):
                # migration 0043: the page was rendered, its screenshot kept beside its text
                shot = f"research/{org}/{sid}/{'0' * 64}.png"
                blobs.put(shot, b"\x89PNG\r\n\x1a\n", "image/png")
                research_objects.append(shot)
                ex(
                    "UPDATE research_sources SET screenshot_object = %s, screenshot_hash = %s,"
                    " render_outcome = 'rendered' WHERE org_id = %s AND id = %s",
                    shot,
                    "0" * 64,
                    org,
                    sid,
                )
            ex(
                "INSERT INTO research_passages (org_id, source_id, ord, text, model, embedding)"
                " VALUES (%s, %s, 0, %s, 'offline', %s::vector)",
                org,
                sid,
                text,
                _vector(dim, 3),
            )
    # an import job whose file rejected a row quoting Dana's address (the report keeps it)
    ex(
        "INSERT INTO import_jobs (id, org_id, kind, format, filename, object_name,"
        " declared_bytes, status, rows_total, rows_done, rows_created, rows_rejected,"
        " requested_by) VALUES (%s, %s, 'prospects', 'csv', 'contacts.csv', %s, 64,"
        " 'completed', 2, 2, 1, 1, 'user_1')",
        f"{org}_imp1",
        org,
        imported,
    )
    ex(
        "INSERT INTO import_errors (org_id, job_id, row_number, line, field, reason, value)"
        " VALUES (%s, %s, 2, 3, 'email', 'not a valid email address', %s)",
        org,
        f"{org}_imp1",
        f"{email}>",
    )
    ex(
        "INSERT INTO rejected_deliveries (function, claimed_org_id, reason)"
        " VALUES ('admin', %s, 'forbidden')",
        org,
    )
    # the audit log (append-only for the application role) records a decision about Dana's
    # draft with its diff, and the effect it caused; the suppression list holds her address
    ex(
        "INSERT INTO audit_log (org_id, event, approval_item_id, item_kind, actor, channel,"
        " action, reason, detail) VALUES (%s, 'decision', %s, 'outbound_message', 'user_1',"
        " 'ui', 'edit', %s, %s::jsonb)",
        org,
        items["out1"],
        f"shorter for {name}",
        json.dumps({"diff": {"body": {"from": f"Hi {name}", "to": "Hi Dana"}}}),
    )
    ex(
        "INSERT INTO audit_log (org_id, event, approval_item_id, item_kind, actor, channel,"
        " action, detail) VALUES (%s, 'effect', %s, 'outbound_message', 'user_1', 'ui',"
        " 'message_queued', %s::jsonb)",
        org,
        items["out1"],
        json.dumps({"subject_id": dana}),
    )
    ex(
        "INSERT INTO suppressions (org_id, address, reason)"
        " VALUES (%s, encode(sha256(convert_to(%s, 'UTF8')), 'hex'), 'unsubscribed')",
        org,
        email,
    )
    cur.execute("SELECT to_regclass('budget_holds') IS NOT NULL")
    if cur.fetchone()[0]:  # migration 0044: a budget, its alert, and Dana's step held by it
        ex("UPDATE org_settings SET budget_monthly_usd = 50 WHERE org_id = %s", org)
        ex(
            "INSERT INTO budget_alerts (org_id, month, kind, spent_usd, budget_usd, alert_share,"
            " hard_cap) VALUES (%s, date_trunc('month', now())::date, 'soft', 41, 50, 0.8, true)",
            org,
        )
        envelope = {"parent_run_id": run, "downstream_agent": "enrichment", "entity_ids": [dana]}
        ex(
            "INSERT INTO budget_holds (org_id, run_id, step_key, campaign_id, topic, event)"
            " VALUES (%s, %s, %s, %s, 'colony-enrichment', %s::jsonb)",
            org,
            run,
            f"enrich:{dana}",
            f"{org}_camp",
            json.dumps({"kind": "handoff", "org_id": org, "envelope": envelope}),
        )
    conn.commit()
    return Seeded(org, dana, email, name, other, (t1, t2, kit, imported, *research_objects))


def dump(conn: Any, org: str) -> dict[str, list[str]]:
    """Every row of every table that mentions ``org`` anywhere in its text, as JSON text
    (sorted): generated from the catalog, so a new table is in the dump."""
    cur = conn.cursor()
    tables = sorted({t for t, _, _ in searchable_columns(cur)})
    out = {}
    for table in tables:
        rows = fetch_all(
            cur,
            f"SELECT row_to_json(t)::text AS j FROM {table} t WHERE row_to_json(t)::text LIKE %s",
            (f"%{org}%",),
        )
        out[table] = sorted(r["j"] for r in rows)
    conn.commit()
    return out


def object_bytes(blobs: BlobStore, org: str) -> dict[str, bytes]:
    prefixes = (f"transcripts/{org}/", f"deployment-kits/{org}/", f"imports/{org}/")
    return {name: blobs.get(name) for p in prefixes for name in blobs.names(p)}


def _has_column(cur: Any, table: str, column: str) -> bool:
    cur.execute(
        "SELECT 1 FROM information_schema.columns WHERE table_name = %s AND column_name = %s",
        (table, column),
    )
    return cur.fetchone() is not None
