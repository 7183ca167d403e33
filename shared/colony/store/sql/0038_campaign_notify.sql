-- Migration 0038 (issue 20 item 2): a campaign's funnel moves live on /overview. Whatever
-- changes what a funnel counts (a campaign, its contacts, its runs and their progress, a
-- contact's ICP recommendation, an outbox row's status, a reply) notifies colony_campaigns
-- with the org's id and nothing else; the chat function's hub wakes that org's funnel
-- streams, which re-read the counts under the org's scope (colony.store.funnels). Triggers,
-- not statements: every writer (the specialists, sending, delivery events, replies,
-- imports, erasure) is covered without each remembering to notify. NOTIFY folds equal
-- payloads of one transaction into one, so a bulk write announces its org once, at commit.
-- Approval items already notify colony_approvals, which the hub counts for the funnels too.
-- Never edit once shipped: append a new migration.
CREATE FUNCTION colony_notify_campaigns() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('colony_campaigns', OLD.org_id);
    ELSE
        PERFORM pg_notify('colony_campaigns', NEW.org_id);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER campaigns_notify AFTER INSERT OR DELETE OR UPDATE OF status, name
    ON campaigns FOR EACH ROW EXECUTE FUNCTION colony_notify_campaigns();
CREATE TRIGGER campaign_contacts_notify AFTER INSERT OR DELETE
    ON campaign_contacts FOR EACH ROW EXECUTE FUNCTION colony_notify_campaigns();
CREATE TRIGGER campaign_runs_notify AFTER INSERT OR UPDATE OF status, contacts_done
    ON campaign_runs FOR EACH ROW EXECUTE FUNCTION colony_notify_campaigns();
CREATE TRIGGER contacts_notify_campaigns AFTER UPDATE OF icp_recommendation ON contacts
    FOR EACH ROW WHEN (OLD.icp_recommendation IS DISTINCT FROM NEW.icp_recommendation)
    EXECUTE FUNCTION colony_notify_campaigns();
CREATE TRIGGER outbox_notify_campaigns AFTER INSERT OR UPDATE OF status ON outbox
    FOR EACH ROW WHEN (NEW.campaign_id IS NOT NULL) EXECUTE FUNCTION colony_notify_campaigns();
CREATE TRIGGER replies_notify_campaigns AFTER INSERT ON replies
    FOR EACH ROW EXECUTE FUNCTION colony_notify_campaigns();
