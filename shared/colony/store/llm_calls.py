"""LLM calls: one row per successful model call, the system of record for usage (``llm_calls``).

Written by ``colony.observability.call_records.CallRecorder`` in its own org-scoped transaction
(``Database.transaction(org_id)``), so the numbers can be analysed without Langfuse.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

ADD = """
INSERT INTO llm_calls (
    org_id, agent_id, run_id, model, kc_domains_queried,
    tokens_in, tokens_out, context_budget_used, latency_ms, call_id, provenance
)
VALUES (%s, %s, %s, %s, %s::text[], %s, %s, %s::jsonb, %s, %s, %s::jsonb)
"""

# The same rows as ``ADD``, any number at once, as a data-modifying CTE another statement
# embeds (``chat_events.APPEND_WITH_TURNS``, so a chat turn's write carries its calls'
# records): its one parameter is a JSON array of objects with ``ADD``'s columns.
ADD_MANY = """
INSERT INTO llm_calls (
    org_id, agent_id, run_id, model, kc_domains_queried,
    tokens_in, tokens_out, context_budget_used, latency_ms, call_id, provenance
)
SELECT org_id, agent_id, run_id, model, kc_domains_queried,
       tokens_in, tokens_out, context_budget_used, latency_ms, call_id, provenance
FROM jsonb_populate_recordset(NULL::llm_calls, %s::jsonb)
"""


def add(
    cur: Any,
    *,
    org_id: str,
    agent_id: str,
    run_id: str | None,
    model: str,
    kc_domains_queried: Sequence[str],
    tokens_in: int,
    tokens_out: int,
    context_budget_used: Mapping[str, int],
    latency_ms: float | None,
    call_id: str | None = None,
    provenance: Mapping[str, Any] | None = None,
) -> None:
    """Keep one call's record (``context_budget_used``: tokens per context section;
    ``provenance``: what its context was built from, ``colony.context.provenance``)."""
    cur.execute(
        ADD,
        (
            org_id,
            agent_id,
            run_id,
            model,
            list(kc_domains_queried),
            tokens_in,
            tokens_out,
            json.dumps(dict(context_budget_used)),
            latency_ms,
            call_id,
            json.dumps(dict(provenance or {})),
        ),
    )
