"""Deployed functions, Pub/Sub topics and Cloud Tasks queues: one registry for code,
terraform checks and the knowledge graph.

Names are what GCP sees: topic and queue ids, function names (the folder under functions/).
"""

from __future__ import annotations

from dataclasses import dataclass
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
    purpose: str
    max_attempts: int = 5
    max_dispatches_per_second: float = 5.0


@dataclass(frozen=True, slots=True)
class Function:
    name: str  # folder under functions/ and the deployed function's name
    trigger: Trigger
    topic: str | None  # for pubsub-triggered functions
    agent: str | None  # AGT id it runs, if any
    purpose: str
    entry_point: str = "handle"


DEAD_LETTER_TOPIC = "colony-dead-letter"

TOPICS: dict[str, Topic] = {
    t.name: t
    for t in (
        Topic("colony-campaign", "campaign run control: start, resume, contact finished (AGT-002)"),
        Topic("colony-enrichment", "handoffs to prospect enrichment (AGT-003)"),
        Topic("colony-qualification", "handoffs to qualification (AGT-004)"),
        Topic("colony-message-generator", "handoffs to the message generator (AGT-005)"),
        # knowledge pipelines (issue 6) add their topics here
        # content / onboarding (issue 7) add their topics here
        Topic(DEAD_LETTER_TOPIC, "messages that exhausted their delivery attempts", 0),
    )
}

QUEUES: dict[str, Queue] = {
    q.name: q
    for q in (
        Queue("colony-campaign-resume", "circuit-breaker resumes of paused campaigns", 5, 1.0),
        # knowledge pipelines (issue 6) add their queues here
    )
}

FUNCTIONS: dict[str, Function] = {
    f.name: f
    for f in (
        Function("campaign", "pubsub", "colony-campaign", "AGT-002", "campaign orchestrator"),
        Function("enrichment", "pubsub", "colony-enrichment", "AGT-003", "prospect enrichment"),
        Function("qualification", "pubsub", "colony-qualification", "AGT-004", "ICP scoring"),
        Function(
            "message-generator", "pubsub", "colony-message-generator", "AGT-005",
            "outbound message drafts into the approval queue",
        ),
        Function("campaign-resume", "http", None, "AGT-002", "Cloud Tasks target: resume a run"),
        Function("approval", "http", None, None, "approve / reject / edit approval items"),
        Function("delivery-events", "http", None, None, "delivered/bounced/complained/replied"),
        # chat (issue 5) adds its function here
        # knowledge pipelines (issue 6) add their functions here
        # brief / content / onboarding (issue 7) add their functions here
    )
}  # fmt: skip

# Which topic carries handoffs to each agent (HandoffEnvelope.downstream_agent → topic).
AGENT_TOPICS: dict[str, str] = {
    f.agent: f.topic for f in FUNCTIONS.values() if f.agent and f.topic and f.agent != "AGT-002"
}


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
