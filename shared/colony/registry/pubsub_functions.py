"""The functions Pub/Sub pushes to: one per agent stage, each subscribed to its own topic
(``Function.topic``) and handed each event by ``colony.runtime.edge.pubsub``. Their ids and
the topics they publish to are in ``colony.registry.wiring``; all functions together are
``colony.registry.functions.FUNCTIONS``."""

from __future__ import annotations

from colony.registry.function_spec import Function
from colony.registry.secrets import MODEL_FREE_SECRETS
from colony.registry.wiring import (
    CAMPAIGN_TOPIC,
    CONTENT_TOPIC,
    CRM_QUEUE,
    ENRICHMENT_TOPIC,
    FOLLOW_UP_TOPIC,
    MESSAGE_GENERATOR_TOPIC,
    ONBOARDING_TOPIC,
    QUALIFICATION_TOPIC,
    RECORDING_TOPIC,
    RESEARCH_QUEUE,
    SEND_QUEUE,
)

PUBSUB_FUNCTIONS: tuple[Function, ...] = (
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
        enqueues=(RESEARCH_QUEUE,),  # a company not yet researched is researched first
        # 3, not 4: the research function's instances took the fourth's connections
        max_instances=3,
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
        # decided here, so it holds what deciding needs: the appliers' topics and queues.
        publishes=(ONBOARDING_TOPIC, CAMPAIGN_TOPIC, CONTENT_TOPIC),
        enqueues=(SEND_QUEUE, RESEARCH_QUEUE, CRM_QUEUE),
        max_instances=4,
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
        # the call's summary is logged in the org's HubSpot; its deal update's card reads it
        enqueues=(CRM_QUEUE,),
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
