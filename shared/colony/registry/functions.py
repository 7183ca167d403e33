"""Deployed functions, Pub/Sub topics and Cloud Tasks queues: one registry for code,
terraform checks and the knowledge graph.

Names are what GCP sees: topic and queue ids, function names (the folder under functions/).
This module is the registry's front: ``FUNCTIONS`` (the Pub/Sub-triggered ones in
``pubsub_functions``, the HTTP ones in ``http_functions``, each a ``function_spec.Function``),
what is derived from them (the redelivery wiring, ``AGENT_TOPICS``, connection pool sizes),
and every name of ``wiring`` (topics, queues) and of the secret sets, so that one import
serves code, the terraform generation and the tests.
"""

from __future__ import annotations

from dataclasses import replace

from colony.errors import ValidationFailed
from colony.registry.function_spec import Function, Grant, Trigger
from colony.registry.http_functions import HTTP_FUNCTIONS
from colony.registry.pubsub_functions import PUBSUB_FUNCTIONS
from colony.registry.secrets import (
    EMBEDDING_SECRETS,
    JWT_SECRETS,
    MODEL_FREE_SECRETS,
    PROVIDER_SECRETS,
    RUNTIME_SECRETS,
    TRACING_SECRETS,
)
from colony.registry.wiring import (
    CAMPAIGN_RESUME_QUEUE,
    CAMPAIGN_TOPIC,
    CONTENT_TOPIC,
    CRM_QUEUE,
    DAILY_BRIEF_QUEUE,
    DEAD_LETTER_TOPIC,
    ENRICHMENT_TOPIC,
    ERASURE_QUEUE,
    FOLLOW_UP_TOPIC,
    IMPORT_QUEUE,
    INVOKER_ACCOUNT,
    KC_TIER_QUEUE,
    LIFECYCLE_QUEUE,
    MESSAGE_GENERATOR_TOPIC,
    NOTION_REEMBED_QUEUE,
    ONBOARDING_TOPIC,
    QUALIFICATION_TOPIC,
    QUEUES,
    RECORDING_TOPIC,
    REDELIVER_QUEUE,
    RESEARCH_QUEUE,
    SEND_QUEUE,
    SEQUENCE_QUEUE,
    TOPICS,
    Queue,
    Topic,
    topic,
)

__all__ = [
    "AGENT_TOPICS",
    "CAMPAIGN_RESUME_QUEUE",
    "CAMPAIGN_TOPIC",
    "CONTENT_TOPIC",
    "CRM_QUEUE",
    "DAILY_BRIEF_QUEUE",
    "DEAD_LETTER_TOPIC",
    "EMBEDDING_SECRETS",
    "ENRICHMENT_TOPIC",
    "ERASURE_QUEUE",
    "FOLLOW_UP_TOPIC",
    "FUNCTIONS",
    "IMPORT_QUEUE",
    "INVOKER_ACCOUNT",
    "JWT_SECRETS",
    "KC_TIER_QUEUE",
    "LIFECYCLE_QUEUE",
    "MESSAGE_GENERATOR_TOPIC",
    "MODEL_FREE_SECRETS",
    "NESTED_TRANSACTION_SPARE",
    "NOTION_REEMBED_QUEUE",
    "ONBOARDING_TOPIC",
    "PROVIDER_SECRETS",
    "QUALIFICATION_TOPIC",
    "QUEUES",
    "RECORDING_TOPIC",
    "REDELIVER_QUEUE",
    "RESEARCH_QUEUE",
    "RUNTIME_SECRETS",
    "SEND_QUEUE",
    "SEQUENCE_QUEUE",
    "TOPICS",
    "TRACING_SECRETS",
    "Function",
    "Grant",
    "Queue",
    "Topic",
    "Trigger",
    "function",
    "pool_size",
    "topic",
]


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


# Pub/Sub-triggered first, then HTTP; within each, in the order their modules list them.
FUNCTIONS: dict[str, Function] = _with_redelivery(
    {f.name: f for f in (*PUBSUB_FUNCTIONS, *HTTP_FUNCTIONS)}
)

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


def function(name: str) -> Function:
    try:
        return FUNCTIONS[name]
    except KeyError:
        raise ValidationFailed(f"unknown function {name!r}") from None
