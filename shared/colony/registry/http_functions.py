"""The functions called over HTTP: Cloud Tasks and Cloud Scheduler targets (invoked only by
the invoker account), provider webhooks and the user-facing APIs (``public``: they
authenticate each caller themselves). All functions together are
``colony.registry.functions.FUNCTIONS``."""

from __future__ import annotations

from colony.registry.function_spec import Function
from colony.registry.secrets import (
    EMBEDDING_SECRETS,
    JWT_SECRETS,
    MAILBOX_APP_SECRETS,
    MODEL_FREE_SECRETS,
    RUNTIME_SECRETS,
    TRACING_SECRETS,
)
from colony.registry.wiring import (
    CAMPAIGN_RESUME_QUEUE,
    CAMPAIGN_TOPIC,
    CONTENT_TOPIC,
    CRM_QUEUE,
    DAILY_BRIEF_QUEUE,
    ENRICHMENT_TOPIC,
    ERASURE_QUEUE,
    IMPORT_QUEUE,
    KC_TIER_QUEUE,
    LIFECYCLE_QUEUE,
    MESSAGE_GENERATOR_TOPIC,
    NOTION_REEMBED_QUEUE,
    ONBOARDING_TOPIC,
    RECORDING_TOPIC,
    RESEARCH_QUEUE,
    SEND_QUEUE,
    SEQUENCE_QUEUE,
)

HTTP_FUNCTIONS: tuple[Function, ...] = (
    Function(
        name="campaign-resume",
        trigger="http",
        topic=None,
        agent="AGT-002",
        purpose=(
            "Cloud Tasks target: resume a run, hand a sequence's next step to AGT-005, put"
            " a rate-limited event back on its topic, or publish again the campaign work a"
            " spent budget held"
        ),
        secrets=MODEL_FREE_SECRETS,
        publishes=(ENRICHMENT_TOPIC, MESSAGE_GENERATOR_TOPIC),
        max_instances=1,
    ),
    Function(
        name="approval",
        trigger="http",
        topic=None,
        agent=None,
        purpose="approve / reject / edit approval items",
        secrets=(*RUNTIME_SECRETS, *JWT_SECRETS, "COLONY_APPROVAL_TOKEN_KEY"),
        # an approved chat tool resumes its turn here (launch, content request, research)
        publishes=(ONBOARDING_TOPIC, CAMPAIGN_TOPIC, CONTENT_TOPIC),
        # an approved message is handed to the send step; approved research is queued; an
        # approved deal update is written back to HubSpot (and a conflict's choice)
        enqueues=(SEND_QUEUE, RESEARCH_QUEUE, CRM_QUEUE),
        public=True,
        max_instances=3,
    ),
    Function(
        name="delivery-events",
        trigger="http",
        topic=None,
        agent=None,
        purpose="mail events (Resend, Svix-signed): delivery, bounces, replies; unsubscribes",
        secrets=(
            *MODEL_FREE_SECRETS,
            "COLONY_DELIVERY_WEBHOOK_SECRET",
            "COLONY_UNSUBSCRIBE_TOKEN_KEY",
            "COLONY_RESEND_API_KEY",  # reads back the replies Resend's inbound webhook names
        ),
        enqueues=(CAMPAIGN_RESUME_QUEUE, CRM_QUEUE),  # a reply is logged in the org's HubSpot
        public=True,
        max_instances=2,
    ),
    Function(
        name="send",
        trigger="http",
        topic=None,
        agent=None,
        purpose=(
            "Cloud Tasks target: send one approved message (SMTP relay or Resend, or the"
            " org's own Gmail / Microsoft 365 mailbox)"
        ),
        # the mailbox apps' secrets refresh an org's mailbox grant before it sends
        secrets=(
            *MODEL_FREE_SECRETS,
            "COLONY_SMTP_PASSWORD",
            "COLONY_RESEND_API_KEY",
            "COLONY_UNSUBSCRIBE_TOKEN_KEY",
            *MAILBOX_APP_SECRETS,
        ),
        # a sent step schedules the sequence's next one; a deferred message its own retry;
        # a sent message is logged in the org's HubSpot
        enqueues=(SEQUENCE_QUEUE, SEND_QUEUE, CRM_QUEUE),
        concurrency=4,
        max_instances=1,
    ),
    Function(
        name="chat",
        trigger="http",
        topic=None,
        agent="AGT-001",
        purpose="GTM orchestrator chat (SSE) and /overview",
        # the Slack app's signing secret: its Approve / Reject clicks arrive here
        secrets=(*RUNTIME_SECRETS, *JWT_SECRETS, "COLONY_SLACK_SIGNING_SECRET"),
        # it decides approval items too, so it publishes and enqueues what their appliers do
        publishes=(CAMPAIGN_TOPIC, CONTENT_TOPIC, ONBOARDING_TOPIC),
        enqueues=(SEND_QUEUE, RESEARCH_QUEUE, CRM_QUEUE),
        # its approval cards sign deployment-kit links (colony.flows.approvals.approval_queue)
        assets="read",
        public=True,
        timeout_seconds=300,
        max_instances=5,
    ),
    Function(
        name="drive-webhook",
        trigger="http",
        topic=None,
        agent=None,
        purpose="Drive push: transcript to GCS + ENT-006",
        secrets=(*MODEL_FREE_SECRETS, "COLONY_DRIVE_CHANNEL_TOKEN"),
        assets="write",
        publishes=(RECORDING_TOPIC,),
        public=True,
        max_instances=1,
    ),
    Function(
        name="notion-webhook",
        trigger="http",
        topic=None,
        agent=None,
        purpose="Notion events → re-embed tasks",
        secrets=(*MODEL_FREE_SECRETS, "COLONY_NOTION_SIGNING_SECRET"),
        enqueues=(NOTION_REEMBED_QUEUE,),
        public=True,
        max_instances=1,
    ),
    Function(
        name="reembed",
        trigger="http",
        topic=None,
        agent=None,
        purpose=(
            "Cloud Tasks target: re-embed one Notion page, backfill / reconciliation steps,"
            " an org's daily Notion reconciliation (the daily schedule's share)"
        ),
        # each workspace's token is read from its own Secret Manager secret
        # (colony-notion-*, granted in terraform/secrets.tf), not from a setting
        secrets=EMBEDDING_SECRETS,
        # a step queues the next (or itself, after a 429); a page that carries its org
        # past the Knowledge Core threshold queues the org's move (issue 16)
        enqueues=(NOTION_REEMBED_QUEUE, KC_TIER_QUEUE),
        timeout_seconds=300,
        max_instances=1,
    ),
    Function(
        name="research",
        trigger="http",
        topic=None,
        agent=None,
        purpose=(
            "Cloud Tasks target: research one company for an org (website, feeds, job board,"
            " PDFs), politely and safely, storing each source with its provenance"
        ),
        secrets=EMBEDDING_SECRETS,  # its passages are embedded; no chat model
        publishes=(ENRICHMENT_TOPIC,),  # the contacts that waited for it go on to AGT-003
        enqueues=(RESEARCH_QUEUE,),  # itself again, when a site's pace holds it back
        assets="write",  # research/<org>/: page bytes and extracted text
        timeout_seconds=300,
        # a task mostly waits on a site's pace: 4 companies at once per instance, 2 instances
        # (the connection budget, docs/deploy.md: enrichment gave up an instance for them)
        concurrency=4,
        max_instances=2,
        # Pages that need JavaScript are rendered by Chromium (docs/research.md), which a
        # buildpack cannot carry: our own image does. Each render starts a browser of its
        # own; four at once on a heavy page (a 20,000-paragraph DOM and a canvas) peaked at
        # 1.45 GiB summed PSS, one at 0.56 GiB, beside the runner's ~0.25 GiB, and the
        # profiles go to /tmp, which is memory on Cloud Run: 4 GiB leaves room; 2 CPUs keep
        # four browser starts well inside a render's 30 s deadline.
        image="browser",
        memory="4Gi",
        cpu="2",
    ),
    Function(
        name="crm",
        trigger="http",
        topic=None,
        agent=None,
        purpose=(
            "Cloud Tasks target of an org's HubSpot both ways: approved deal updates written"
            " back, sent messages, replies and call summaries logged, the deal a card shows"
            " read; backfill pages, the webhook's events applied, the daily reconciliation"
        ),
        # reads (and refreshes) each org's token from its own secret (colony-crm-*,
        # terraform/secrets.tf); the app's secret refreshes it
        secrets=(*MODEL_FREE_SECRETS, "COLONY_HUBSPOT_CLIENT_SECRET"),
        # a backfill queues its continuation, a drain itself after HubSpot's wait
        enqueues=(CRM_QUEUE,),
        timeout_seconds=540,  # a backfill task runs pages for a while, then queues the rest
        # the only bundle with the HubSpot SDK (about 50 MB installed: docs/crm.md)
        # one task at a time: a write is one or two HubSpot calls, a portal's own limit (10
        # calls a second) paces the sync anyway, and the connection budget has room for
        # one more connection, not four (docs/deploy.md)
        concurrency=1,
        max_instances=1,
    ),
    Function(
        name="daily-brief",
        trigger="http",
        topic=None,
        agent="AGT-010",
        purpose="Cloud Tasks target: one org's daily brief (the daily schedule's share)",
        timeout_seconds=300,
        max_instances=1,
    ),
    Function(
        name="admin",
        trigger="http",
        topic=None,
        agent=None,
        purpose=(
            "org admin API: erasure requests and reports, retention periods, org data,"
            " imports, Notion workspace connections, Drive folder watches, company research,"
            " HubSpot connections, stage mapping, backfills and HubSpot's webhook, sender"
            " mailboxes and their grants, the team (owners, backup, time zone, people from"
            " Clerk)"
        ),
        # the Drive channel token signs the token of a folder watch it creates; the HubSpot
        # app's secret exchanges an org's OAuth code (and revokes its token on disconnect);
        # Clerk's secret key reads an org's people when an admin resyncs them
        secrets=(
            *MODEL_FREE_SECRETS,
            *JWT_SECRETS,
            "COLONY_DRIVE_CHANNEL_TOKEN",
            "COLONY_HUBSPOT_CLIENT_SECRET",
            *MAILBOX_APP_SECRETS,  # a mailbox's OAuth code exchanged, its grant given back
            "COLONY_CLERK_SECRET_KEY",
        ),
        # a connected workspace's backfill starts on the re-embed queue; its token is
        # written to its own secret (colony-notion-*, terraform/secrets.tf)
        # a budget raised past what was spent queues the release of the campaign work it held;
        # a mailbox connected again (or resumed) hands what waited for it to the send queue
        enqueues=(
            ERASURE_QUEUE,
            NOTION_REEMBED_QUEUE,
            IMPORT_QUEUE,
            RESEARCH_QUEUE,
            CAMPAIGN_RESUME_QUEUE,
            SEND_QUEUE,
            # a HubSpot reconnect queues again the pushes that waited; HubSpot's webhook
            # (POST /crm/hubspot/webhook) a drain per org; a backfill started its first page
            CRM_QUEUE,
        ),
        # signs upload URLs under imports/<org>/ (a signed PUT acts as its signer, so it
        # needs object create) and reads an upload's size before queueing it
        assets="write",
        public=True,  # it verifies the bearer token and the org admin role itself
        concurrency=2,  # a few admins at a time: it only opens jobs and reads reports
        max_instances=1,
    ),
    Function(
        name="clerk-webhook",
        trigger="http",
        topic=None,
        agent=None,
        purpose="Clerk organization and membership events → orgs, their people, or erasure",
        secrets=(*MODEL_FREE_SECRETS, "COLONY_CLERK_WEBHOOK_SECRET"),
        enqueues=(ERASURE_QUEUE,),  # organization.deleted opens the org's erasure job
        public=True,  # it verifies Svix's signature of every delivery itself
        concurrency=1,  # org events are rare: one at a time is plenty
        max_instances=1,
    ),
    Function(
        name="data-lifecycle",
        trigger="http",
        topic=None,
        agent=None,
        purpose=(
            "Cloud Tasks target: erasure and import jobs, Knowledge Core tiering, an"
            " org's retention, Drive renewal and stalled research, the reply mailbox poll;"
            " Cloud Scheduler target: every schedule"
        ),
        # the Langfuse keys delete an erased org's traces; no model is called; the Drive
        # channel token signs a renewed channel's token; the reply mailbox is polled, and
        # the replies held while Resend's could not be read are read
        # (colony.flows.outbound.held_mail)
        secrets=(
            *MODEL_FREE_SECRETS,
            *TRACING_SECRETS,
            "COLONY_DRIVE_CHANNEL_TOKEN",
            "COLONY_REPLY_MAILBOX_PASSWORD",
            "COLONY_RESEND_API_KEY",
        ),
        # every schedule fans out from here to its target's queue (colony.registry.schedules);
        # the daily retention run queues the org's Knowledge Core move if it outgrew the
        # shared partition by any path (approvals, imports), not only by Notion pages; the
        # research sweep hands a stalled pass to a new research task
        enqueues=(
            LIFECYCLE_QUEUE,
            DAILY_BRIEF_QUEUE,
            NOTION_REEMBED_QUEUE,
            KC_TIER_QUEUE,
            RESEARCH_QUEUE,
            CAMPAIGN_RESUME_QUEUE,  # the budget-release schedule's tasks
            SEND_QUEUE,  # the notify schedule's tasks (the send function runs them)
            CRM_QUEUE,  # a polled reply logged in HubSpot; the crm-reconcile schedule's tasks
        ),
        assets="write",  # deletes transcripts, kits and imports
        timeout_seconds=540,
        concurrency=1,
        max_instances=1,
    ),
)
