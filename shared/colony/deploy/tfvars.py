"""``terraform/registry.auto.tfvars.json``: the registries the code uses, as terraform input.

Terraform never lists a function, topic, queue, schedule or secret by hand: it iterates
(``for_each``) over this file, which is generated from ``colony.registry.functions``,
``colony.registry.schedules`` and ``colony.registry.secrets``. ``make package`` rewrites
it; a test fails when the committed file is stale, so code and infrastructure cannot drift
apart.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from colony.errors import ConfigError
from colony.registry.functions import (
    DEAD_LETTER_TOPIC,
    FUNCTIONS,
    INVOKER_ACCOUNT,
    QUEUES,
    TOPICS,
    Function,
    Grant,
)
from colony.registry.schedules import SCHEDULES
from colony.registry.secrets import SECRETS

TFVARS = Path("terraform") / "registry.auto.tfvars.json"

# What every function's account needs whatever it does (project-level roles, with why).
BASE_GRANTS: tuple[Grant, ...] = (Grant("roles/logging.logWriter", "write its structured logs"),)
EVENT_GRANTS: tuple[Grant, ...] = ()  # Pub/Sub pushes to it; it needs nothing to receive


def _check(function: Function) -> None:
    problems = [
        f"secret {s!r} is not in registry.secrets.SECRETS"
        for s in function.secrets
        if s not in SECRETS
    ]
    problems += [f"topic {t!r} is not registered" for t in function.publishes if t not in TOPICS]
    problems += [f"queue {q!r} is not registered" for q in function.enqueues if q not in QUEUES]
    if (function.trigger == "pubsub") != (function.topic is not None):
        problems.append("a pubsub function needs a topic, an http one none")
    if function.topic is not None and function.topic not in TOPICS:
        problems.append(f"topic {function.topic!r} is not registered")
    if not 1 <= function.timeout_seconds <= (600 if function.trigger == "pubsub" else 3600):
        problems.append("timeout_seconds out of range (Pub/Sub acks within 600 s)")
    problems += [
        f"{g.role} is a primitive role"
        for g in function.roles
        if g.role in {"roles/owner", "roles/editor", "roles/viewer"}
    ]
    if problems:
        raise ConfigError(f"function {function.name!r}: {'; '.join(problems)}")


def account_id(name: str) -> str:
    """The function's own service account id (6-30 chars of ``[a-z0-9-]``)."""
    return f"colony-{name}"[:30].rstrip("-")


def _function(function: Function) -> dict[str, Any]:
    _check(function)
    topic = TOPICS[function.topic] if function.topic else None
    roles = {g.role: g.why for g in (*BASE_GRANTS, *function.roles)}
    return {
        "account_id": account_id(function.name),
        "entry_point": function.entry_point,
        "trigger": function.trigger,
        "topic": function.topic,
        "agent": function.agent,
        "description": function.purpose,
        "memory": function.memory,
        "cpu": function.cpu,
        "timeout_seconds": function.timeout_seconds,
        "concurrency": function.concurrency,
        "max_instances": function.max_instances,
        "secrets": sorted(set(function.secrets)),
        "publishes": sorted(set(function.publishes)),
        "enqueues": sorted(set(function.enqueues)),
        "assets": function.assets,
        "public": function.public,
        "roles": roles,
        "max_delivery_attempts": topic.max_delivery_attempts if topic else 0,
        "image": function.image,
    }


def registry_tfvars() -> dict[str, Any]:
    """Everything terraform iterates over, as plain JSON values."""
    accounts = [account_id(name) for name in FUNCTIONS]
    if len(set(accounts)) != len(accounts) or INVOKER_ACCOUNT in accounts:
        raise ConfigError("two accounts (functions, the invoker) would share an id; rename one")
    return {
        "functions": {name: _function(f) for name, f in sorted(FUNCTIONS.items())},
        "topics": {
            name: {"purpose": t.purpose, "max_delivery_attempts": t.max_delivery_attempts}
            for name, t in sorted(TOPICS.items())
        },
        "dead_letter_topic": DEAD_LETTER_TOPIC,
        "invoker_account_id": INVOKER_ACCOUNT,
        "queues": {
            name: {
                "purpose": q.purpose,
                "max_attempts": q.max_attempts,
                "max_dispatches_per_second": q.max_dispatches_per_second,
            }
            for name, q in sorted(QUEUES.items())
        },
        "schedules": {
            name: {
                "cron": s.cron,
                "time_zone": s.time_zone,
                "serves": s.serves,
                "purpose": s.purpose,
            }
            for name, s in sorted(SCHEDULES.items())
        },
        "secrets": dict(sorted(SECRETS.items())),
    }


def render() -> str:
    return json.dumps(registry_tfvars(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write(repo: Path) -> Path:
    path = repo / TFVARS
    text = render()
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path
