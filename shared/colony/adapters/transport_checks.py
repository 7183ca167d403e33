"""What both transports check and how they name things, so the two agree.

``GcpTransport`` (``transport_gcp``), ``LocalTransport`` (``transport_local``) and the
in-memory fake (``colony.testing.inline``) refuse the same topics, queues, targets,
attributes and bodies, and name tasks, topics and target URLs identically. Kept apart from
``colony.adapters.transport``, which picks one of the two adapters, so that each adapter
imports these without importing the module that imports it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from datetime import UTC, datetime

from colony.errors import ConfigError, ValidationFailed
from colony.registry.functions import FUNCTIONS, QUEUES, TOPICS, Function

_TASK_ID_OK = re.compile(r"^[A-Za-z0-9_-]{1,500}$")
_TASK_ID_BAD = re.compile(r"[^A-Za-z0-9_-]")
MAX_TASK_ID = 500  # Cloud Tasks' limit on the task id


def task_id_for(task_id: str) -> str:
    """A Cloud Tasks task id for ``task_id``: only ``[A-Za-z0-9_-]``, at most 500 characters.

    A valid id is kept as it is. Otherwise the disallowed characters become ``-`` and a short
    hash of the original is appended, so ids that differ only in those characters (``a:b`` and
    ``a/b``) still name different tasks, and the same input always names the same task.
    """
    if not isinstance(task_id, str) or not task_id:
        raise ValidationFailed("task_id must be a non-empty string")
    if _TASK_ID_OK.match(task_id):
        return task_id
    digest = hashlib.sha256(task_id.encode()).hexdigest()[:16]
    cleaned = _TASK_ID_BAD.sub("-", task_id)[: MAX_TASK_ID - len(digest) - 1]
    return f"{cleaned}-{digest}"


def rfc3339(moment: datetime) -> str:
    """A ``google.protobuf.Timestamp`` in its JSON form (UTC, ``Z``), as Pub/Sub and Cloud
    Tasks write times."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def topic_path(project: str, topic: str) -> str:
    return f"projects/{project}/topics/{topic}"


def queue_path(project: str, region: str, queue: str) -> str:
    return f"projects/{project}/locations/{region}/queues/{queue}"


def check_topic(topic: str) -> None:
    if topic not in TOPICS:
        raise ValidationFailed(f"unknown topic {topic!r}; known: {', '.join(sorted(TOPICS))}")


def check_attributes(attributes: Mapping[str, str]) -> dict[str, str]:
    """Pub/Sub attributes: non-empty string keys (not ``goog``-prefixed), string values."""
    out: dict[str, str] = {}
    for key, value in attributes.items():
        if not isinstance(key, str) or not key or key.startswith("goog"):
            raise ValidationFailed(f"invalid Pub/Sub attribute name {key!r}")
        if not isinstance(value, str):
            raise ValidationFailed(f"Pub/Sub attribute {key!r} must be a string")
        out[key] = value
    return out


def check_data(data: bytes) -> bytes:
    if not isinstance(data, bytes | bytearray):
        raise ValidationFailed("message data must be bytes")
    return bytes(data)


def subscriber_of(topic: str) -> Function | None:
    """The function subscribed to ``topic`` in the registry (None: no subscriber)."""
    return next((f for f in FUNCTIONS.values() if f.topic == topic), None)


def function_url(function_urls: Mapping[str, str], name: str) -> str:
    url = function_urls.get(name)
    if not url:
        raise ConfigError(
            f"no URL for function {name!r}; set it in COLONY_FUNCTION_URLS "
            '(a JSON object such as {"' + name + '": "http://127.0.0.1:8081"})'
        )
    return url


def task_request(
    function_urls: Mapping[str, str],
    project: str,
    region: str,
    queue: str,
    target: str,
    body: bytes,
    task_id: str,
    delay_seconds: float,
) -> tuple[str, bytes, str]:
    """Check a task both transports are asked to schedule; return (target URL, body, the
    full task name) so that both name it identically."""
    payload = check_task(queue, target, body, delay_seconds)
    url = function_url(function_urls, target)
    return url, payload, task_name(project, region, queue, task_id)


def check_task(queue: str, target: str, body: bytes, delay_seconds: float) -> bytes:
    """Check a task's queue, target function, body and delay (what every transport refuses,
    the in-memory fake included); return the body as bytes."""
    task_target(queue, target)
    payload = check_data(body)
    if delay_seconds < 0:
        raise ValidationFailed("delay_seconds must be >= 0")
    return payload


def task_name(project: str, region: str, queue: str, task_id: str) -> str:
    """The full Cloud Tasks name ``schedule`` returns for ``task_id`` in ``queue``."""
    return f"{queue_path(project, region, queue)}/tasks/{task_id_for(task_id)}"


def task_target(queue: str, target: str) -> Function:
    """Check a Cloud Tasks queue and its HTTP-triggered target function."""
    if queue not in QUEUES:
        raise ValidationFailed(f"unknown queue {queue!r}; known: {', '.join(sorted(QUEUES))}")
    function = FUNCTIONS.get(target)
    if function is None:
        raise ValidationFailed(f"unknown function {target!r}")
    if function.trigger != "http":
        raise ValidationFailed(f"function {target!r} is not HTTP-triggered; tasks cannot reach it")
    return function
