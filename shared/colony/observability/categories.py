"""The agent runtime's error categories (seed §8.2), each reported to Sentry as its own issue.

    context_assembly   an agent's context could not be assembled (a section over its budget,
                       a template and its variables disagreeing, a task value missing)
    tool_call_parse    a model's tool call could not be parsed (arguments that are not a JSON
                       object, an unknown tool, arguments breaking the tool's schema)
    circuit_breaker    CONST-005 paused a campaign: its bounce or complaint rate crossed the
                       campaign's threshold (not an exception: an event worth a look)

``report`` sends one event per occurrence, in a scope of its own tagged ``colony.category``
plus ``org_id``, ``run_id`` and ``agent_id`` when known, with the fingerprint
``["colony", <category>, <kind>]`` (kind: our error code, the exception type, or ``tripped``)
so each category groups into stable issues whatever the message. An exception is captured
with it (scrubbed like every event: type and code, never its message); a breaker trip is a
message whose text is the category's fixed title (``TITLES``, the only message text
``colony.observability.sentry.scrub`` keeps). When the exception then escapes to the edge's
``error_scope`` the SDK's dedupe drops the second report, so it stays one event.

Called from where each happens: ``colony.llm.agent_call`` (assembly; a provider's malformed
tool call), the chat turn (a tool call its tools refuse) and ``colony.flows.outbound.delivery`` (the
breaker). Without an active Sentry client it does nothing and imports nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Literal

from colony.errors import ColonyError

Category = Literal["context_assembly", "tool_call_parse", "circuit_breaker"]
TAG = "colony.category"
TITLES: dict[str, str] = {
    "context_assembly": "context assembly failed",
    "tool_call_parse": "a model's tool call could not be parsed",
    "circuit_breaker": "circuit breaker tripped: a campaign was paused",
}


def fingerprint(category: Category, error: BaseException | None) -> list[str]:
    if error is None:
        kind = "tripped"
    elif isinstance(error, ColonyError):
        kind = error.code
    else:
        kind = type(error).__name__
    return ["colony", category, kind]


def report(
    category: Category,
    error: BaseException | None = None,
    *,
    org_id: str | None,
    run_id: str | None,
    agent_id: str | None,
    tags: Mapping[str, str] | None = None,
) -> None:
    """One Sentry event of ``category`` (see the module docstring); ``tags``: more ids (a
    campaign id), never text from a prompt or an answer."""
    sentry_sdk = sys.modules.get("sentry_sdk")
    if sentry_sdk is None or not sentry_sdk.get_client().is_active():
        return
    with sentry_sdk.new_scope() as scope:
        for name, value in (
            *(tags or {}).items(),
            ("org_id", org_id),
            ("run_id", run_id),
            ("agent_id", agent_id),
        ):
            if value:
                scope.set_tag(name, value)
        scope.set_tag(TAG, category)
        scope.fingerprint = fingerprint(category, error)
        if error is None:
            scope.level = "warning"
            sentry_sdk.capture_message(TITLES[category], level="warning")
        else:
            sentry_sdk.capture_exception(error)
