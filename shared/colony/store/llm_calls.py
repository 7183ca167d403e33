"""LLM calls: one row per successful model call, the system of record for usage and cost
(``llm_calls``).

Written by ``colony.observability.call_records.CallRecorder`` in its own org-scoped transaction
(``Database.transaction(org_id)``), so the numbers can be analysed without Langfuse.

A row names the campaign it was for (``campaign_id``): the campaign of the campaign run its
``run_id`` names, looked up here as the row is written, under the org's row-level security.
A campaign's calls (AGT-003/004/005, and AGT-005's later sequence steps) carry their run's id,
and ``campaign_runs`` maps each run to exactly one campaign; any other ``run_id`` (a chat turn,
a recording, a content request) names no campaign run, so the call is for no campaign (NULL).
Nothing is inferred from a name or a time. Each row is also counted into the org's daily
totals (``llm_usage_daily``) by a trigger (migration 0048).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

ADD = """
INSERT INTO llm_calls (
    org_id, agent_id, run_id, model, kc_domains_queried,
    tokens_in, tokens_out, context_budget_used, latency_ms, call_id, provenance,
    tokens_cached, cost_usd, campaign_id
)
VALUES (%s, %s, %s, %s, %s::text[], %s, %s, %s::jsonb, %s, %s, %s::jsonb, %s, %s::numeric,
        (SELECT r.campaign_id FROM campaign_runs r WHERE r.id = %s))
"""

# The same rows as ``ADD``, any number at once, as a data-modifying CTE another statement
# embeds (``chat_events.APPEND_WITH_TURNS``, so a chat turn's write carries its calls'
# records): its one parameter is a JSON array of objects with ``ADD``'s columns (every one
# but ``campaign_id``, looked up as in ``ADD``; ``cost_usd`` as a string, kept exact).
ADD_MANY = """
INSERT INTO llm_calls (
    org_id, agent_id, run_id, model, kc_domains_queried,
    tokens_in, tokens_out, context_budget_used, latency_ms, call_id, provenance,
    tokens_cached, cost_usd, campaign_id
)
SELECT c.org_id, c.agent_id, c.run_id, c.model, c.kc_domains_queried,
       c.tokens_in, c.tokens_out, c.context_budget_used, c.latency_ms, c.call_id, c.provenance,
       c.tokens_cached, c.cost_usd,
       (SELECT r.campaign_id FROM campaign_runs r WHERE r.id = c.run_id)
FROM jsonb_populate_recordset(NULL::llm_calls, %s::jsonb) AS c
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
    tokens_cached: int = 0,
    cost_usd: Decimal | None = None,
) -> None:
    """Keep one call's record (``context_budget_used``: tokens per context section;
    ``provenance``: what its context was built from, ``colony.context.provenance``;
    ``cost_usd``: None when the price table has no price for ``model``)."""
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
            tokens_cached,
            None if cost_usd is None else str(cost_usd),
            run_id,
        ),
    )
