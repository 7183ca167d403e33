"""What a trace may say, checked where traces are recorded (SPEC §5, §7).

A call's trace is analysed later (in Langfuse, in ``llm_calls``, by ``colony explain``) by
agent and by context section, so it may only name what the system knows:

- ``agent_id``: one of the registry's agents (``AGT-001`` .. ``AGT-010``), not a profile
  (``AGT-006/pass1`` is traced as ``AGT-006``) nor a name of the caller's choosing;
- ``context_budget_used``: tokens of sections SPEC §5 budgets (``SECTIONS``: system, kc,
  entity, history, task), any of them left out (a call with no history counts none);
- ``latency_ms``, once the call has been timed: a measured duration, finite and above
  zero (a clock that did not move measured nothing, and a row of zeros would pass for
  the fastest model in any analysis of them).

``TracedChatModel`` checks a request's ids before the model is called (a call that could not
be traced is not made) and the record before its generation ends; ``store_records`` checks
each record before its ``llm_calls`` row is written. A refusal is ``ValidationFailed`` naming
the field and the value: ids and numbers only, never prompt text.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from colony.context.budgets import SECTIONS
from colony.errors import ValidationFailed
from colony.ports import CallContext, LlmCallRecord
from colony.registry.agents import AGENTS


def _check_ids(agent_id: str, budget_used: Mapping[str, int]) -> None:
    if agent_id not in AGENTS:
        raise ValidationFailed(
            f"trace agent_id {agent_id!r} is not an agent of the registry"
            f" ({min(AGENTS)} .. {max(AGENTS)})"
        )
    unknown = sorted(set(budget_used) - set(SECTIONS))
    if unknown:
        raise ValidationFailed(
            f"trace context_budget_used counts {', '.join(map(repr, unknown))}, which SPEC §5"
            f" does not budget (its sections: {', '.join(SECTIONS)})"
        )


def check_context(context: CallContext) -> CallContext:
    """``context``, if its agent and its budget's sections are ones the spec knows."""
    _check_ids(context.agent_id, context.context_budget_used)
    return context


def check_record(record: LlmCallRecord) -> LlmCallRecord:
    """``record``, if its ids pass ``check_context``'s rules and its latency was measured."""
    _check_ids(record.agent_id, record.context_budget_used)
    latency = record.latency_ms
    if (
        isinstance(latency, bool)
        or not isinstance(latency, int | float)
        or not math.isfinite(latency)
        or latency <= 0
    ):
        raise ValidationFailed(
            f"trace latency_ms {latency!r} is not a measured duration"
            " (a finite number of milliseconds above 0)"
        )
    return record
