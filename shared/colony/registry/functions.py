"""Deployed functions, Pub/Sub topics and Cloud Tasks queues: one registry for code,
terraform checks and the knowledge graph.

Names are what GCP sees: topic and queue ids, function names (the folder under functions/).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from colony.errors import ValidationFailed

Trigger = Literal["pubsub", "http"]


@dataclass(frozen=True, slots=True)
class Topic:
    name: str
    purpose: str
    max_delivery_attempts: int = 5  # then the message goes to the dead-letter topic


@dataclass(frozen=True, slots=True)
class Queue:
    name: str
    target: str  # the HTTP function its tasks call
    purpose: str
    max_attempts: int = 5
    max_dispatches_per_second: float = 5.0


@dataclass(frozen=True, slots=True)
class Grant:
    """A project-level IAM role a function's service account holds, and why it needs it."""

    role: str
    why: str


# What a function's composition root (colony.runtime.deps) reads. Names are settings
# environment names; colony.registry.secrets.SECRETS maps them to Secret Manager ids. Every function
# reads the application role's password and the error reporting DSN; the model provider keys
# only matter to functions that build the model client or the embedder (both are built on
# first use, and the key is checked there), and the Langfuse keys only to those that call a
# chat model (they trace model calls; the secret key reads every org's traced prompts).
PROVIDER_SECRETS: tuple[str, ...] = ("OPENAI_API_KEY", "GEMINI_API_KEY")
TRACING_SECRETS: tuple[str, ...] = ("LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY")
# For functions that never call a chat model nor embed text: no provider key, no Langfuse.
MODEL_FREE_SECRETS: tuple[str, ...] = ("COLONY_DB_PASSWORD", "SENTRY_DSN")
# For functions that embed text (the Knowledge Core) but call no chat model: nothing to trace.
EMBEDDING_SECRETS: tuple[str, ...] = (*MODEL_FREE_SECRETS, *PROVIDER_SECRETS)
RUNTIME_SECRETS: tuple[str, ...] = (*EMBEDDING_SECRETS, *TRACING_SECRETS)  # model functions
JWT_SECRETS: tuple[str, ...] = ("COLONY_JWT_ISSUER", "COLONY_JWT_JWKS_URL")  # user-facing HTTP


@dataclass(frozen=True, slots=True)
class Function:
    """One deployed Cloud Function (gen2). The fields after ``entry_point`` are deployment
    facts: ``terraform/registry.auto.tfvars.json`` is generated from them (colony.deploy)."""

    name: str  # folder under functions/ and the deployed function's name
    trigger: Trigger
    topic: str | None  # for pubsub-triggered functions
    agent: str | None  # AGT id it runs, if any
    purpose: str
    entry_point: str = "handle"
    memory: str = "512Mi"
    cpu: str = "1"
    timeout_seconds: int = 120  # Pub/Sub's ack deadline follows it (at most 600)
    concurrency: int = 8  # requests one instance serves at once (I/O-bound: LLM, database)
    # Instances at most: the sum over functions of max_instances x connections per instance
    # must fit Cloud SQL's max_connections (docs/deploy.md, "Connection budget"; a test adds
    # it up), so raise one only with that budget in view.
    max_instances: int = 2
    secrets: tuple[str, ...] = RUNTIME_SECRETS  # only these are readable by its account
    publishes: tuple[str, ...] = ()  # topics it publishes to (publisher on these topics only)
    enqueues: tuple[str, ...] = ()  # Cloud Tasks queues it adds tasks to
    assets: Literal["none", "read", "write"] = "none"  # access to the colony-assets bucket
    public: bool = False  # anyone may invoke: the function authenticates callers itself
    roles: tuple[Grant, ...] = ()  # further project roles, each with its reason


# Topic and queue ids are written once, here: code names them by these constants or through
# the wiring below (``Function.topic``, ``AGENT_TOPICS``, ``Queue.target``), never by a
# literal (tests/test_registry.py fails on one).
CAMPAIGN_TOPIC = "colony-campaign"
ENRICHMENT_TOPIC = "colony-enrichment"
QUALIFICATION_TOPIC = "colony-qualification"
MESSAGE_GENERATOR_TOPIC = "colony-message-generator"
RECORDING_TOPIC = "colony-recording-intelligence"
FOLLOW_UP_TOPIC = "colony-follow-up"
CONTENT_TOPIC = "colony-content"
ONBOARDING_TOPIC = "colony-onboarding"
DEAD_LETTER_TOPIC = "colony-dead-letter"
CAMPAIGN_RESUME_QUEUE = "colony-campaign-resume"
NOTION_REEMBED_QUEUE = "colony-notion-reembed"
ERASURE_QUEUE = "colony-erasure"
SEND_QUEUE = "colony-send"
SEQUENCE_QUEUE = "colony-sequence"
IMPORT_QUEUE = "colony-import"
LIFECYCLE_QUEUE = "colony-lifecycle"
DAILY_BRIEF_QUEUE = "colony-daily-brief"
REDELIVER_QUEUE = "colony-redeliver"
KC_TIER_QUEUE = "colony-kc-tiering"

# The one service account whose Google OIDC tokens Pub/Sub push, Cloud Tasks and Cloud
# Scheduler present to the functions not marked ``public`` (terraform creates it from this id;
# its email reaches the code as COLONY_INVOKER_SERVICE_ACCOUNT). Those functions accept no other
# caller, in IAM (roles/run.invoker) and in code (colony.runtime.edge.invoker), and the token's
# audience is the function's own URL (COLONY_FUNCTION_URLS).
INVOKER_ACCOUNT = "colony-invoker"

TOPICS: dict[str, Topic] = {
    t.name: t
    for t in (
        Topic(CAMPAIGN_TOPIC, "campaign run control: start, resume, contact finished (AGT-002)"),
        Topic(ENRICHMENT_TOPIC, "handoffs to prospect enrichment (AGT-003)"),
        Topic(QUALIFICATION_TOPIC, "handoffs to qualification (AGT-004)"),
        Topic(MESSAGE_GENERATOR_TOPIC, "handoffs to the message generator (AGT-005)"),
        Topic(RECORDING_TOPIC, "recordings stored by the Drive webhook (AGT-006)"),
        Topic(FOLLOW_UP_TOPIC, "recordings AGT-006 finished, for the follow-up (AGT-007)"),
        Topic(CONTENT_TOPIC, "content requests for the content agent (AGT-008)"),
        Topic(ONBOARDING_TOPIC, "deals moved to closed_won, for deployment kits (AGT-009)"),
        Topic(DEAD_LETTER_TOPIC, "messages that exhausted their delivery attempts", 0),
    )
}

QUEUES: dict[str, Queue] = {
    q.name: q
    for q in (
        Queue(
            CAMPAIGN_RESUME_QUEUE,
            target="campaign-resume",
            purpose="circuit-breaker resumes of paused campaigns",
            max_dispatches_per_second=1.0,
        ),
        Queue(
            NOTION_REEMBED_QUEUE,
            target="reembed",
            purpose="Notion page re-embed jobs (page + window), backfill/reconciliation steps",
            max_dispatches_per_second=3.0,
        ),
        # An erasure job runs its phases in order; a failed attempt is retried and resumes
        # after the last phase it finished (issue 14).
        Queue(
            ERASURE_QUEUE,
            target="data-lifecycle",
            purpose="org and data-subject erasure jobs (named by job id)",
            max_attempts=20,
            max_dispatches_per_second=1.0,
        ),
        # One task per approved message (named by its outbox row): a send is a durable step,
        # retried while the relay refuses for now; a lapsed lease resends the same Message-ID.
        Queue(
            SEND_QUEUE,
            target="send",
            purpose="send one approved outbox message through the mail relay",
            max_attempts=10,
            max_dispatches_per_second=5.0,
        ),
        # One task per later step of a contact's sequence (named by campaign, contact and
        # step), due after the step's delay; it re-reads the enrollment, so a stop holds.
        Queue(
            SEQUENCE_QUEUE,
            target="campaign-resume",
            purpose="the next step of a contact's sequence, after its delay",
            max_dispatches_per_second=5.0,
        ),
        # One task per uploaded file (named by its import job): the job resumes from its
        # checkpoint on every attempt, so a crash mid-file loses at most one batch.
        Queue(
            IMPORT_QUEUE,
            target="data-lifecycle",
            purpose="prospect and deal import jobs (named by job id)",
            max_attempts=20,
            max_dispatches_per_second=1.0,
        ),
        # A scheduled run's share for one org (retention, Drive renewal), the reply mailbox
        # poll, and the run's next page of orgs (colony.flows.tenants.schedules).
        Queue(
            LIFECYCLE_QUEUE,
            target="data-lifecycle",
            purpose="an org's retention or Drive renewal, the mailbox poll, a schedule's next page",
            max_dispatches_per_second=5.0,
        ),
        # A push whose model call was rate limited for longer than a short wait: its event,
        # put back on its topic after the provider's Retry-After (colony.runtime.redelivery).
        Queue(
            REDELIVER_QUEUE,
            target="campaign-resume",
            purpose="an event put back on its topic after the model provider's Retry-After",
            max_dispatches_per_second=5.0,
        ),
        Queue(
            DAILY_BRIEF_QUEUE,
            target="daily-brief",
            purpose="one org's daily brief (fanned out by the daily schedule)",
            max_dispatches_per_second=2.0,
        ),
        # An org that outgrew the shared Knowledge Core partition moves to its own (issue 16;
        # named by org: created once). A cutover that cannot get its locks in time fails and
        # is retried; one at a time (the target runs one request at a time).
        Queue(
            KC_TIER_QUEUE,
            target="data-lifecycle",
            purpose="move an org's Knowledge Core to its own partition and HNSW graphs",
            max_attempts=20,
            max_dispatches_per_second=0.2,
        ),
    )
}

FUNCTIONS: dict[str, Function] = {
    f.name: f
    for f in (
        Function(
            name="campaign",
            trigger="pubsub",
            topic=CAMPAIGN_TOPIC,
            agent="AGT-002",
            secrets=MODEL_FREE_SECRETS,  # run control: no model, no embedding
            purpose="campaign orchestrator",
            publishes=(ENRICHMENT_TOPIC,),
        ),
        # the per-contact stages fan a campaign out: they get the most instances
        Function(
            name="enrichment",
            trigger="pubsub",
            topic=ENRICHMENT_TOPIC,
            agent="AGT-003",
            purpose="prospect enrichment",
            publishes=(QUALIFICATION_TOPIC,),
            max_instances=4,
        ),
        Function(
            name="qualification",
            trigger="pubsub",
            topic=QUALIFICATION_TOPIC,
            agent="AGT-004",
            purpose="ICP scoring",
            publishes=(MESSAGE_GENERATOR_TOPIC,),
            max_instances=4,
        ),
        Function(
            name="message-generator",
            trigger="pubsub",
            topic=MESSAGE_GENERATOR_TOPIC,
            agent="AGT-005",
            purpose="outbound message drafts into the approval queue",
            # A later sequence step the person's approval of step 1 covers (org setting) is
            # decided here, so it holds what deciding needs: the appliers' topics, the send.
            publishes=(ONBOARDING_TOPIC, CAMPAIGN_TOPIC, CONTENT_TOPIC),
            enqueues=(SEND_QUEUE,),
            max_instances=4,
        ),
        Function(
            name="campaign-resume",
            trigger="http",
            topic=None,
            agent="AGT-002",
            purpose=(
                "Cloud Tasks target: resume a run, hand a sequence's next step to AGT-005, or put"
                " a rate-limited event back on its topic"
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
            # an approved chat tool resumes its turn here (launch, content request)
            publishes=(ONBOARDING_TOPIC, CAMPAIGN_TOPIC, CONTENT_TOPIC),
            enqueues=(SEND_QUEUE,),  # an approved message is handed to the send step
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
            enqueues=(CAMPAIGN_RESUME_QUEUE,),
            public=True,
            max_instances=2,
        ),
        Function(
            name="send",
            trigger="http",
            topic=None,
            agent=None,
            purpose="Cloud Tasks target: send one approved message (SMTP relay or Resend)",
            secrets=(
                *MODEL_FREE_SECRETS,
                "COLONY_SMTP_PASSWORD",
                "COLONY_RESEND_API_KEY",
                "COLONY_UNSUBSCRIBE_TOKEN_KEY",
            ),
            enqueues=(SEQUENCE_QUEUE,),  # a sent step schedules the sequence's next one
            concurrency=4,
            max_instances=1,
        ),
        Function(
            name="chat",
            trigger="http",
            topic=None,
            agent="AGT-001",
            purpose="GTM orchestrator chat (SSE) and /overview",
            secrets=(*RUNTIME_SECRETS, *JWT_SECRETS),
            # it decides approval items too, so it publishes what their appliers do
            publishes=(CAMPAIGN_TOPIC, CONTENT_TOPIC, ONBOARDING_TOPIC),
            enqueues=(SEND_QUEUE,),
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
            name="recording-intelligence",
            trigger="pubsub",
            topic=RECORDING_TOPIC,
            agent="AGT-006",
            purpose="two-pass call intelligence: signals, summary, approval items",
            memory="1Gi",
            timeout_seconds=540,
            assets="read",
            publishes=(FOLLOW_UP_TOPIC,),
            # each recording fans out to recording_parallelism pass-1 calls: few per instance
            concurrency=2,
            max_instances=3,
        ),
        Function(
            name="follow-up",
            trigger="pubsub",
            topic=FOLLOW_UP_TOPIC,
            agent="AGT-007",
            purpose="post-call follow-up drafts into the approval queue",
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
                " imports, Notion workspace connections, Drive folder watches"
            ),
            # the Drive channel token signs the token of a folder watch it creates
            secrets=(*MODEL_FREE_SECRETS, *JWT_SECRETS, "COLONY_DRIVE_CHANNEL_TOKEN"),
            # a connected workspace's backfill starts on the re-embed queue; its token is
            # written to its own secret (colony-notion-*, terraform/secrets.tf)
            enqueues=(ERASURE_QUEUE, NOTION_REEMBED_QUEUE, IMPORT_QUEUE),
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
            purpose="Clerk organization events → org rows and defaults, or org erasure",
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
                " org's retention and Drive renewal, the reply mailbox poll; Cloud Scheduler"
                " target: every schedule"
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
            # shared partition by any path (approvals, imports), not only by Notion pages
            enqueues=(LIFECYCLE_QUEUE, DAILY_BRIEF_QUEUE, NOTION_REEMBED_QUEUE, KC_TIER_QUEUE),
            assets="write",  # deletes transcripts, kits and imports
            timeout_seconds=540,
            concurrency=1,
            max_instances=1,
        ),
        Function(
            name="content",
            trigger="pubsub",
            topic=CONTENT_TOPIC,
            agent="AGT-008",
            purpose="content pieces grounded in KC-01/05/07 into the approval queue",
        ),
        Function(
            name="onboarding",
            trigger="pubsub",
            topic=ONBOARDING_TOPIC,
            agent="AGT-009",
            purpose="deployment kit in GCS (signed URL) for a closed-won deal",
            assets="write",
            timeout_seconds=300,
            max_instances=1,
        ),
    )
}


def _with_redelivery(functions: dict[str, Function]) -> dict[str, Function]:
    """Every Pub/Sub function that calls a model may put an event back (``REDELIVER_QUEUE``)
    when the provider asks for a longer wait than is worth sleeping; ``campaign-resume``, the
    queue's target, may publish it back on exactly those functions' topics."""
    callers = [
        f for f in functions.values() if f.trigger == "pubsub" and "OPENAI_API_KEY" in f.secrets
    ]
    out = dict(functions)
    for f in callers:
        out[f.name] = replace(f, enqueues=(*f.enqueues, REDELIVER_QUEUE))
    resume = out["campaign-resume"]
    topics = tuple(dict.fromkeys((*resume.publishes, *(str(f.topic) for f in callers))))
    out["campaign-resume"] = replace(resume, publishes=topics)
    return out


FUNCTIONS = _with_redelivery(FUNCTIONS)

# Which topic carries handoffs to each agent (HandoffEnvelope.downstream_agent → topic).
AGENT_TOPICS: dict[str, str] = {
    f.agent: f.topic for f in FUNCTIONS.values() if f.agent and f.topic and f.agent != "AGT-002"
}


# A request may open one transaction inside another (a chat turn holds its session's lock
# while it records events; an approval runs its applier inside the decision). One connection
# more than the requests and workers that can hold one keeps that from deadlocking: there are
# never more outer transactions than those, so an inner one always finds a free slot.
NESTED_TRANSACTION_SPARE = 1


def pool_size(name: str | None, recording_parallelism: int) -> int:
    """The most connections one instance of function ``name`` opens at once (its
    ``colony.store.Database`` pool): one per concurrent request, plus AGT-006's pass-1
    workers (``recording_parallelism``, shared by the instance's requests), plus the spare
    for a nested transaction. ``None`` or an unknown name (the local stack, tools, tests):
    the largest pool any registered function gets."""
    function = FUNCTIONS.get(name) if name else None
    if function is None:
        return max(pool_size(other, recording_parallelism) for other in FUNCTIONS)
    workers = recording_parallelism if function.agent == "AGT-006" else 0
    return function.concurrency + workers + NESTED_TRANSACTION_SPARE


def topic(name: str) -> Topic:
    try:
        return TOPICS[name]
    except KeyError:
        raise ValidationFailed(f"unknown topic {name!r}") from None


def function(name: str) -> Function:
    try:
        return FUNCTIONS[name]
    except KeyError:
        raise ValidationFailed(f"unknown function {name!r}") from None
