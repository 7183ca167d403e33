"""How an output keeps the model call that made it (issue 19 item 5, ``colony explain``).

A flow's durable step stores what its ``compute`` returned; the call id rides along in it
under ``KEY`` (``carry``) and the ``apply`` that queues the approval item takes it out again
(``take``), so the item's payload, what a person reviews, never holds it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from colony.llm.agent_call import AgentResult

KEY = "_llm_call_id"


def carry(output: Mapping[str, Any], result: AgentResult) -> dict[str, Any]:
    """``output`` with the id of the call ``result`` came from."""
    return {**output, KEY: result.call_id}


def take(output: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """``output`` without the call id, and the call id (None: a step stored before it)."""
    rest = dict(output)
    call_id = rest.pop(KEY, None)
    return rest, call_id if isinstance(call_id, str) and call_id else None
