-- Migration 0054 (issue 35 item 3): notifications where people are. Never edit once shipped:
-- append a new migration. How it is used: colony.flows.notifications.
--
--     a fact committed by its own flow (a reply classified, an item waiting, a breaker trip,
--     an import ended, a budget alert) ─► a trigger writes one notification_events row in
--     the same transaction (durable; nothing else happens there)
--     the ``notify`` schedule, each minute, for each org with something to do
--         ─► each event fanned out to the people who want its kind (notification_items:
--            one per person × kind × event) in their notification (notifications: one per
--            event for Slack, one per hourly digest window for email, unique keys)
--         ─► each due notification claimed, sent once, and marked
--
-- A notification carries no prospect text beyond a subject line, and links to /overview.

-- What an org's notifications need: the local time its brief goes out at (and the next
-- instant that is, in UTC, computed in the org's time zone, so the schedule's audience is a
-- plain comparison), its Slack workspace (the team id interactive requests must name; the bot
-- token is in the secret store, by name here) and whether Slack is paused (a revoked token).
CREATE TABLE notify_settings (
    org_id             text NOT NULL REFERENCES organizations(id),
    brief_at           time NOT NULL DEFAULT '08:00',
    brief_next_at      timestamptz,
    slack_team_id      text CHECK (slack_team_id ~ '^T[A-Z0-9]{2,20}$'),
    slack_token_secret text CHECK (slack_token_secret ~ '^[A-Za-z0-9_-]{1,255}$'),
    slack_paused_at    timestamptz,
    slack_pause_reason text CHECK (length(slack_pause_reason) <= 300),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id)
);
CREATE INDEX notify_settings_brief ON notify_settings (brief_next_at);

-- A person's choice per kind (no row: the kind's default, colony.flows.notifications.prefs).
CREATE TABLE notification_prefs (
    org_id     text NOT NULL,
    user_id    text NOT NULL,
    kind       text NOT NULL CHECK (kind IN ('items_waiting', 'positive_reply',
                                             'negative_reply', 'breaker', 'import', 'brief',
                                             'budget')),
    channel    text NOT NULL CHECK (channel IN ('email', 'slack', 'off')),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, user_id, kind),
    FOREIGN KEY (org_id, user_id) REFERENCES org_members (org_id, user_id) ON DELETE CASCADE
);

-- Who a person is in the org's Slack workspace, as they set it themselves: the user a
-- message is sent to (a direct message from the org's bot) and whose button clicks decide
-- in their name; or an incoming webhook of theirs (its URL is a secret: by name here).
CREATE TABLE slack_users (
    org_id         text NOT NULL,
    user_id        text NOT NULL,
    slack_user_id  text CHECK (slack_user_id ~ '^[UW][A-Z0-9]{2,20}$'),
    webhook_secret text CHECK (webhook_secret ~ '^[A-Za-z0-9_-]{1,255}$'),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, user_id),
    UNIQUE (org_id, slack_user_id),
    CHECK (slack_user_id IS NOT NULL OR webhook_secret IS NOT NULL),
    FOREIGN KEY (org_id, user_id) REFERENCES org_members (org_id, user_id) ON DELETE CASCADE
);

-- One row per fact worth telling people about, written by the trigger of the table that
-- records the fact (below), once per kind and key.
CREATE TABLE notification_events (
    org_id        text NOT NULL REFERENCES organizations(id),
    id            bigint GENERATED ALWAYS AS IDENTITY,
    kind          text NOT NULL,
    event_key     text NOT NULL,
    subject       text NOT NULL CHECK (length(subject) <= 300),
    link          text NOT NULL CHECK (link LIKE '/overview%'),
    contact_id    text,  -- the prospect it is about: erased, nothing about it is sent
    item_id       text,  -- the approval item it is about (Slack's buttons decide it)
    occurred_at   timestamptz NOT NULL DEFAULT now(),
    dispatched_at timestamptz,
    outcome       text,  -- what the fan-out did: 'fanned', 'erased', 'nobody'
    PRIMARY KEY (org_id, id),
    UNIQUE (org_id, kind, event_key)
);
CREATE INDEX notification_events_waiting ON notification_events (org_id, id)
    WHERE dispatched_at IS NULL;

-- What is sent: one Slack message per event, or one email digest per person and window
-- (``dedupe_key`` unique), its state and its attempts.
CREATE TABLE notifications (
    org_id       text NOT NULL REFERENCES organizations(id),
    id           bigint GENERATED ALWAYS AS IDENTITY,
    user_id      text NOT NULL,
    channel      text NOT NULL CHECK (channel IN ('email', 'slack')),
    kind         text NOT NULL,  -- an event kind, or 'digest'
    dedupe_key   text NOT NULL,
    status       text NOT NULL DEFAULT 'pending'
                 CHECK (status IN ('pending', 'sending', 'sent', 'failed', 'held', 'dropped')),
    due_at       timestamptz NOT NULL,
    attempts     integer NOT NULL DEFAULT 0,
    lease_until  timestamptz,
    sent_at      timestamptz,
    error        text CHECK (length(error) <= 500),
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, id),
    UNIQUE (org_id, dedupe_key)
);
CREATE INDEX notifications_due ON notifications (org_id, due_at)
    WHERE status IN ('pending', 'sending');
-- at most one open email digest per person: new items join it until it is claimed
CREATE UNIQUE INDEX notifications_open_digest ON notifications (org_id, user_id)
    WHERE channel = 'email' AND kind = 'digest' AND status = 'pending';

-- Which event a notification carries for which person: once per person, kind and event.
CREATE TABLE notification_items (
    org_id          text NOT NULL,
    notification_id bigint NOT NULL,
    event_id        bigint NOT NULL,
    user_id         text NOT NULL,
    kind            text NOT NULL,
    PRIMARY KEY (org_id, notification_id, event_id),
    UNIQUE (org_id, user_id, kind, event_id),
    FOREIGN KEY (org_id, notification_id) REFERENCES notifications (org_id, id)
        ON DELETE CASCADE,
    FOREIGN KEY (org_id, event_id) REFERENCES notification_events (org_id, id)
        ON DELETE CASCADE
);

-- A decision made with a Slack button is a person's, on the audit log as channel 'slack'.
ALTER TABLE audit_log DROP CONSTRAINT audit_log_channel_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_channel_check
    CHECK (channel IN ('ui', 'link', 'chat-confirmed', 'system', 'sequence', 'admin', 'slack'));

-- The triggers: each runs as the caller, under the row's org (row-level security holds), and
-- only inserts the event (ON CONFLICT DO NOTHING: a fact told once).
CREATE FUNCTION colony_notify_event(org text, kind text, event_key text, subject text,
                                    link text, contact text, item text)
RETURNS void LANGUAGE sql AS $$
    INSERT INTO notification_events (org_id, kind, event_key, subject, link, contact_id,
                                     item_id)
    VALUES (org, kind, event_key, left(coalesce(nullif(subject, ''), kind), 300), link,
            contact, item)
    ON CONFLICT (org_id, kind, event_key) DO NOTHING
$$;

CREATE FUNCTION colony_notify_reply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM colony_notify_event(
        NEW.org_id, NEW.sentiment || '_reply', NEW.id,
        'Reply: ' || coalesce((SELECT o.subject FROM outbox o WHERE o.id = NEW.outbox_id), ''),
        '/overview#reply-' || NEW.id, NEW.contact_id, NULL);
    RETURN NULL;
END
$$;
CREATE TRIGGER replies_notify AFTER INSERT ON replies
    FOR EACH ROW WHEN (NEW.sentiment IN ('positive', 'negative'))
    EXECUTE FUNCTION colony_notify_reply();

CREATE FUNCTION colony_notify_item() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM colony_notify_event(
        NEW.org_id, 'items_waiting', NEW.id,
        replace(NEW.kind, '_', ' ') || coalesce(': ' || (NEW.payload->>'subject'), ''),
        '/overview#item-' || NEW.id,
        coalesce(NEW.payload->>'contact_id',
                 CASE WHEN NEW.kind IN ('outbound_message', 'sequence_task')
                      THEN NEW.subject_id END),
        NEW.id);
    RETURN NULL;
END
$$;
CREATE TRIGGER approval_items_notify AFTER INSERT ON approval_items
    FOR EACH ROW WHEN (NEW.status = 'pending') EXECUTE FUNCTION colony_notify_item();

CREATE FUNCTION colony_notify_breaker() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM colony_notify_event(
        NEW.org_id, 'breaker', NEW.id || '@' || extract(epoch FROM NEW.paused_at)::bigint,
        'Campaign "' || NEW.name || '" paused by the circuit breaker',
        '/overview#campaign-' || NEW.id, NULL, NULL);
    RETURN NULL;
END
$$;
CREATE TRIGGER campaigns_notify_breaker AFTER UPDATE OF status, paused_at ON campaigns
    FOR EACH ROW
    WHEN (NEW.status = 'paused' AND NEW.paused_at IS DISTINCT FROM OLD.paused_at)
    EXECUTE FUNCTION colony_notify_breaker();

CREATE FUNCTION colony_notify_import() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM colony_notify_event(
        NEW.org_id, 'import', NEW.id,
        'Import of ' || NEW.kind || ' ' || NEW.status || ': ' || NEW.rows_created
            || ' created, ' || NEW.rows_updated || ' updated, ' || NEW.rows_rejected
            || ' rejected',
        '/overview#import-' || NEW.id, NULL, NULL);
    RETURN NULL;
END
$$;
CREATE TRIGGER import_jobs_notify AFTER UPDATE OF status ON import_jobs
    FOR EACH ROW
    WHEN (NEW.status IN ('completed', 'failed') AND OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION colony_notify_import();

CREATE FUNCTION colony_notify_budget() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM colony_notify_event(
        NEW.org_id, 'budget', NEW.id::text,
        CASE NEW.kind WHEN 'soft' THEN 'Budget alert: '
                      ELSE 'Budget reached: ' END
            || to_char(NEW.spent_usd, 'FM999999990.00') || ' of '
            || to_char(NEW.budget_usd, 'FM999999990.00') || ' USD this month',
        '/overview#usage', NULL, NULL);
    RETURN NULL;
END
$$;
CREATE TRIGGER budget_alerts_notify AFTER INSERT ON budget_alerts
    FOR EACH ROW EXECUTE FUNCTION colony_notify_budget();
-- The alerts raised before there was a way to deliver them (0048 kept them waiting).
INSERT INTO notification_events (org_id, kind, event_key, subject, link, occurred_at)
SELECT org_id, 'budget', id::text,
       CASE kind WHEN 'soft' THEN 'Budget alert: ' ELSE 'Budget reached: ' END
           || to_char(spent_usd, 'FM999999990.00') || ' of '
           || to_char(budget_usd, 'FM999999990.00') || ' USD this month',
       '/overview#usage', raised_at
FROM budget_alerts WHERE delivered_at IS NULL;

-- The ``notify`` schedule (each minute) serves the orgs with an event to fan out, a
-- notification due, or a brief due: 0053's lister with that audience added, every earlier
-- audience kept (0053's 'escalation' among them).
CREATE OR REPLACE FUNCTION colony_scheduled_orgs(serves text, after text, page integer)
RETURNS SETOF text
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_catalog AS $$
BEGIN
    IF serves NOT IN ('orgs', 'notion', 'drive', 'research', 'sending_domains', 'held',
                      'escalation', 'notify') THEN
        RAISE EXCEPTION 'unknown schedule audience %', serves USING ERRCODE = '22023';
    END IF;
    RETURN QUERY
        SELECT o.id FROM organizations o
        WHERE o.id > coalesce(after, '')
          AND NOT EXISTS (SELECT 1 FROM erasure_jobs j WHERE j.target_org = o.id
                          AND j.contact_id IS NULL AND j.status = 'pending')
          AND (serves = 'orgs'
               OR (serves = 'notion' AND EXISTS (SELECT 1 FROM notion_workspaces w
                   WHERE w.org_id = o.id AND w.status = 'connected'))
               OR (serves = 'drive' AND EXISTS (SELECT 1 FROM drive_channels c
                   WHERE c.org_id = o.id AND c.status = 'active'))
               OR (serves = 'research' AND EXISTS (SELECT 1 FROM research_jobs r
                   WHERE r.org_id = o.id AND r.status = 'running'
                     AND (r.lease_until IS NULL OR r.lease_until < now())
                     AND r.touched_at < now() - interval '1800 seconds'))
               OR (serves = 'sending_domains' AND EXISTS (SELECT 1 FROM sending_domains d
                   WHERE d.org_id = o.id AND d.status IN ('verified', 'paused')))
               OR (serves = 'held' AND EXISTS (SELECT 1 FROM budget_holds h
                   WHERE h.org_id = o.id AND h.released_at IS NULL))
               OR (serves = 'escalation' AND EXISTS (SELECT 1 FROM org_team t
                   JOIN approval_items a ON a.org_id = t.org_id AND a.status = 'pending'
                   JOIN org_members m ON m.org_id = t.org_id AND m.user_id = t.backup_user_id
                        AND m.status = 'active'
                   WHERE t.org_id = o.id AND t.escalate_after_hours IS NOT NULL
                     AND a.escalated_at IS NULL
                     AND a.assignee IS DISTINCT FROM t.backup_user_id
                     AND a.routed_at < now() - make_interval(hours => t.escalate_after_hours)))
               OR (serves = 'notify' AND (
                   EXISTS (SELECT 1 FROM notification_events e
                           WHERE e.org_id = o.id AND e.dispatched_at IS NULL)
                   OR EXISTS (SELECT 1 FROM notifications n
                              WHERE n.org_id = o.id AND n.status IN ('pending', 'sending')
                                AND n.due_at <= now()
                                AND (n.lease_until IS NULL OR n.lease_until < now()))
                   OR EXISTS (SELECT 1 FROM notify_settings s
                              WHERE s.org_id = o.id AND s.brief_next_at <= now()))))
        ORDER BY o.id
        LIMIT least(greatest(page, 1), 1000);
END
$$;
