"""Provenance of outputs (issue 19 item 5): which model calls made an output, and what
each call's context was built from (``llm_calls.provenance``); outcomes credited to the
Knowledge Core chunks that grounded a call (``kc_chunk_credits``).

Every function takes the cursor of a transaction opened under the org
(``Database.transaction(org_id)``), so RLS scopes each statement to it.

An output is found by its id, one statement for every kind, following the call id the
output stored (``llm_call_id``) wherever it has one:
* an approval item: the call named by ``llm_call_id``; an item queued without one (before
  0029) by its ``run_id`` and source agent;
* a daily brief: its row id, its date or ``brief:<date>``: the call named by its
  ``llm_call_id`` (migration 0037); a brief stored before that, the run id of its AGT-010 call;
* a chat answer: its turn id: the calls named by the ``llm_call_id`` of the assistant rows
  the turn wrote (its answer and its tool calls); a turn stored before that, the run id of
  every AGT-001 call of the turn.
"""

from __future__ import annotations

import re
from typing import Any

from colony.errors import ValidationFailed
from colony.store.db import Row, fetch_all, fetch_value

OUTCOME = re.compile(r"^[a-z][a-z_]{0,39}$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")

EXPLAIN = """
WITH item AS (
    SELECT id, kind, llm_call_id, run_id, source_agent FROM approval_items WHERE id = %s
),
brief AS (
    SELECT id, brief_date, llm_call_id FROM daily_briefs
    WHERE id = %s OR brief_date = %s::date
),
turn AS (
    SELECT llm_call_id FROM chat_turns WHERE turn_id = %s AND turn_id IS NOT NULL
),
linked AS (
    SELECT llm_call_id FROM item WHERE llm_call_id IS NOT NULL
    UNION SELECT llm_call_id FROM brief WHERE llm_call_id IS NOT NULL
    UNION SELECT llm_call_id FROM turn WHERE llm_call_id IS NOT NULL
)
SELECT COALESCE((SELECT kind FROM item),
                CASE WHEN EXISTS (SELECT 1 FROM brief) THEN 'brief' END,
                CASE WHEN EXISTS (SELECT 1 FROM turn) THEN 'chat_turn' END,
                CASE WHEN c.run_id LIKE 'brief:%%' THEN 'brief' ELSE 'chat_turn' END)
           AS output_kind,
       c.id, c.call_id, c.agent_id, c.run_id, c.model, c.kc_domains_queried, c.tokens_in,
       c.tokens_out, c.context_budget_used, c.provenance, c.created_at
FROM llm_calls c
WHERE CASE
    WHEN EXISTS (SELECT 1 FROM linked) THEN c.call_id IN (SELECT llm_call_id FROM linked)
    WHEN EXISTS (SELECT 1 FROM item)
        THEN c.run_id = (SELECT run_id FROM item) AND c.agent_id = (SELECT source_agent FROM item)
    ELSE c.run_id = COALESCE((SELECT 'brief:' || brief_date FROM brief LIMIT 1), %s)
END
ORDER BY c.id
"""

# One statement: every chunk in the call's provenance (any of its rows: a repair or a retry
# shares the call id and the context) gets the outcome, once.
CREDIT = """
INSERT INTO kc_chunk_credits (org_id, call_id, chunk_id, content_hash, domain, outcome)
SELECT DISTINCT c.org_id, c.call_id, (chunk->>'id')::bigint, chunk->>'content_hash',
       chunk->>'domain', %s
FROM llm_calls c, jsonb_array_elements(c.provenance->'chunks') AS chunk
WHERE c.call_id = %s AND chunk->>'id' IS NOT NULL AND chunk->>'content_hash' IS NOT NULL
ON CONFLICT DO NOTHING
RETURNING chunk_id
"""
CREDITS = """
SELECT chunk_id, content_hash, domain, outcome, count(*) AS n FROM kc_chunk_credits
WHERE chunk_id = ANY(%s::bigint[]) GROUP BY chunk_id, content_hash, domain, outcome
ORDER BY chunk_id, outcome
"""
CALL_OF_ITEM = "SELECT llm_call_id FROM approval_items WHERE id = %s"


def run_id_of(output_id: str) -> str:
    """The run id an output id that is not an approval item names (a brief's date: its run)."""
    return f"brief:{output_id}" if _DATE.match(output_id) else output_id


def calls_for(cur: Any, output_id: str) -> list[Row]:
    """The model calls that made ``output_id``, oldest first (empty: none on record)."""
    output_id = output_id.strip()
    if not output_id:
        raise ValidationFailed("an output id is required (an approval item, a turn, a brief)")
    day = output_id.removeprefix("brief:")
    brief_day = day if _DATE.match(day) else None
    params = (output_id, output_id, brief_day, output_id, run_id_of(output_id))
    return fetch_all(cur, EXPLAIN, params)


def call_of_item(cur: Any, item_id: str) -> str | None:
    """The id of the call that drafted approval item ``item_id`` (None: none recorded)."""
    value = fetch_value(cur, CALL_OF_ITEM, (item_id,))
    return None if value is None else str(value)


def _check_outcome(outcome: str) -> None:
    if not OUTCOME.match(outcome):
        raise ValidationFailed(
            f"outcome {outcome!r} must be a lower-case word (letters and underscores)"
        )


def credit_outcome(cur: Any, call_id: str, outcome: str) -> int:
    """Credit ``outcome`` (``delivered``, ``replied_positive``, ``bounced``, ...) to each KC
    chunk that grounded call ``call_id``; returns how many chunks were newly credited (a
    repeat of the same outcome credits nothing more)."""
    _check_outcome(outcome)
    if not call_id or not call_id.strip():
        raise ValidationFailed("a call id is required to credit an outcome")
    return len(fetch_all(cur, CREDIT, (outcome, call_id)))


def credit_item_outcome(cur: Any, item_id: str, outcome: str) -> int:
    """``credit_outcome`` for the call that drafted approval item ``item_id`` (0: none)."""
    _check_outcome(outcome)
    call_id = call_of_item(cur, item_id)
    return 0 if call_id is None else credit_outcome(cur, call_id, outcome)


def credits(cur: Any, chunk_ids: list[int]) -> list[Row]:
    """Per chunk and outcome, how many calls it grounded got that outcome."""
    return fetch_all(cur, CREDITS, (chunk_ids,))
