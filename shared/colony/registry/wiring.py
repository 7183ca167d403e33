"""The wiring between functions: Pub/Sub topics and Cloud Tasks queues, their ids and
delivery settings, and the one account that invokes the functions through them.

Names are what GCP sees (topic and queue ids). Each id is written once, here; the functions
that publish to a topic or add tasks to a queue say so in their registry entries
(``colony.registry.functions``).
"""

from __future__ import annotations

from dataclasses import dataclass

from colony.errors import ValidationFailed


@dataclass(frozen=True, slots=True)
class Topic:
    """A Pub/Sub topic: its name, what it carries and its delivery attempts."""

    name: str
    purpose: str
    max_delivery_attempts: int = 5  # then the message goes to the dead-letter topic


@dataclass(frozen=True, slots=True)
class Queue:
    """A Cloud Tasks queue: its name, the function its tasks call and its limits."""

    name: str
    target: str  # the HTTP function its tasks call
    purpose: str
    max_attempts: int = 5
    max_dispatches_per_second: float = 5.0


# Topic and queue ids are written once, here: code names them by these constants or through
# the registry's wiring (``Function.topic``, ``colony.registry.functions.AGENT_TOPICS``,
# ``Queue.target``), never by a literal (tests/test_registry.py fails on one).
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
RESEARCH_QUEUE = "colony-research"
CRM_QUEUE = "colony-crm"

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
        # One task per company an org researches (named by org, domain, pass and step): it
        # fetches until the site's pace holds it back, then schedules itself for when the
        # site is free. The pace itself is held in PostgreSQL (research_sites), not here.
        Queue(
            RESEARCH_QUEUE,
            target="research",
            purpose="research one company's website, feeds, job board and PDFs for an org",
            max_attempts=20,
            max_dispatches_per_second=20.0,
        ),
        # Everything Colony does with an org's CRM (issue 36): one task per push (named by
        # the push row: an approved deal update or an engagement) and per card whose HubSpot
        # deal is read; a backfill's next pages, the webhook's events applied, the daily
        # reconciliation. A paused connection's pushes wait in PostgreSQL (crm_pushes), not
        # here, until an admin reconnects. HubSpot allows 110 requests per 10 s per portal:
        # the sync counts them in PostgreSQL (colony.flows.crm.limits) and a task that meets
        # the limit queues itself after the wait; the dispatch rate stays under it.
        Queue(
            CRM_QUEUE,
            target="crm",
            purpose=(
                "an org's CRM both ways: write-back and engagements, backfill, webhook"
                " events and reconciliation"
            ),
            max_attempts=20,
            max_dispatches_per_second=5.0,
        ),
    )
}


def topic(name: str) -> Topic:
    try:
        return TOPICS[name]
    except KeyError:
        raise ValidationFailed(f"unknown topic {name!r}") from None
