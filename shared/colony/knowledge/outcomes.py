"""Outbound exemplars (KC-08) proven by outcomes: what became of each approved message, and
AGT-005's choice of the three to write from (issue 19 item 3; seed §6.4, §7.7).

An approved message is one chunk (``source = 'approval'``, the approval item's id as source
id) tagged with its ``angle``, ``tier``, ``step`` and ``persona``. Its delivery events and
replies set its ``outcome`` tag (``record``). ``select`` picks exemplars in one round trip:

- only the requested angle, and within it only the requested tier when at least ``k`` of
  the angle are in that tier;
- ranked by outcome (``RANK``: a positive reply first, a bounce last), then by similarity;
- fewer than ``k`` in the angle: the rest come from other angles, each marked
  ``selected_by = 'fallback'`` so the trace and the approval card show it.

The angle's rows are found by their own index (``(org_id, tags->>'angle')`` over KC-08,
migration 0036) and ranked exactly (outcome comes before distance, so no vector index can
serve the order); only the rows whose outcome can reach the top ``k`` have their vectors
read. AGT-005's grounding runs the selection and the retrieval of its other domains as one
statement (``KnowledgeStore.exemplars``). Measured in ``bench/exemplars.py``, on the shared
partition and on an org's own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from colony.errors import ValidationFailed
from colony.knowledge import tiering
from colony.knowledge.indexes import check_org_literal
from colony.store.db import fetch_all
from colony.vectors import VectorParam

DOMAIN = "KC-08"
# Best first. A reply of unknown mood still shows the message was read; no outcome yet
# (``None``) sits between a delivery and a negative reply.
RANK: dict[str | None, int] = {
    "replied_positive": 0,
    "replied_unknown": 1,
    "replied": 1,
    "delivered": 2,
    None: 3,
    "replied_negative": 4,
    "bounced": 5,
    "complained": 6,
}
OUTCOMES: tuple[str, ...] = tuple(o for o in RANK if o is not None)
MAX_K = 10
MAX_TAG = 200  # an angle or tier longer than this is not one of ours

_LOCK_TIER = "SELECT pg_advisory_xact_lock_shared(hashtextextended(%s, 0))"
# Only a change of outcome moves ``updated_at``: the tier move copies rows by it.
_RECORD = """
UPDATE kc_chunks SET tags = tags || jsonb_build_object('outcome', %s::text), updated_at = now()
WHERE org_id = %s AND domain = 'KC-08' AND source = 'approval' AND source_id = %s
  AND tags->>'outcome' IS DISTINCT FROM %s
"""


def _rank_sql(alias: str) -> str:
    whens = " ".join(f"WHEN '{o}' THEN {r}" for o, r in RANK.items() if o is not None)
    return f"(CASE {alias}tags->>'outcome' {whens} ELSE {RANK[None]} END)"


# The org is inlined as a validated literal (partition pruning: ``colony.knowledge.store``).
# ``angle`` reads only ids and tags, found by the ``(org_id, tags->>'angle')`` index of KC-08
# (migration 0036); vectors (TOASTed, 6 KB at 1536-d) are read back by primary key only for
# the rows whose outcome can still make the top k (``cut``), which is what keeps the exact
# rank cheap on a few hundred messages. The CTEs follow a ``q`` (the query vector) that the
# statement defines first, so the retrieval of the other domains can share the statement
# (``KnowledgeStore.exemplars``: one round trip for the whole grounding).
PICKS = """angle AS MATERIALIZED (
  SELECT id, {rank} AS outcome_rank, coalesce(tags->>'tier' = %s, false) AS in_tier
  FROM kc_chunks
  WHERE org_id = '{org}' AND domain = 'KC-08' AND tags->>'angle' = %s AND embedding_model = %s
),
counts AS (SELECT count(*) FILTER (WHERE in_tier) >= %s AS tiered, count(*) AS n FROM angle),
eligible AS MATERIALIZED (
  SELECT a.id, a.outcome_rank FROM angle a CROSS JOIN counts c WHERE a.in_tier OR NOT c.tiered
),
cut AS (SELECT max(outcome_rank) AS r
        FROM (SELECT outcome_rank FROM eligible ORDER BY outcome_rank LIMIT %s) best),
picks AS MATERIALIZED (
  SELECT id, title, content, tags, 1 - distance AS similarity, selected_by,
         row_number() OVER (ORDER BY pass, outcome_rank, distance, id) AS pick_order
  FROM (
    SELECT k.id, k.title, k.content, k.tags, k.embedding <=> (SELECT v FROM q) AS distance,
           e.outcome_rank, 0 AS pass,
           CASE WHEN (SELECT tiered FROM counts) THEN 'angle+tier' ELSE 'angle' END AS selected_by
    FROM eligible e JOIN kc_chunks k ON k.org_id = '{org}' AND k.id = e.id
    WHERE e.outcome_rank <= (SELECT r FROM cut)
    UNION ALL
    SELECT f.id, f.title, f.content, f.tags, f.embedding <=> (SELECT v FROM q), {frank}, 1,
           'fallback'
    FROM kc_chunks f
    WHERE f.org_id = '{org}' AND f.domain = 'KC-08' AND f.embedding_model = %s
      AND f.tags->>'angle' IS DISTINCT FROM %s AND (SELECT n FROM counts) < %s
  ) candidates
  ORDER BY pass, outcome_rank, distance, id
  LIMIT %s
)"""
_SELECT = """WITH q AS MATERIALIZED (SELECT %s::vector AS v),
{picks}
SELECT id, title, content, tags, similarity, selected_by FROM picks ORDER BY pick_order"""


@dataclass(frozen=True, slots=True)
class Picked:
    """One exemplar as ``select`` chose it; ``selected_by`` is ``angle+tier``, ``angle`` or
    ``fallback`` (from another angle: the requested one had too few)."""

    id: int
    title: str | None
    content: str
    tags: dict[str, Any]
    similarity: float
    selected_by: str

    @property
    def outcome(self) -> str | None:
        value = self.tags.get("outcome")
        return str(value) if value is not None else None


def picks_sql(org_id: str) -> str:
    """The selection's CTEs for ``org_id`` (pure; the org id is validated), ending in
    ``picks``: after a ``q`` CTE, and taking ``picks_params`` after its vector."""
    org = check_org_literal(org_id)
    return PICKS.format(org=org, rank=_rank_sql(""), frank=_rank_sql("f."))


def select_sql(org_id: str) -> str:
    """The one-round-trip selection for ``org_id`` alone (pure; the org id is validated)."""
    return _SELECT.format(picks=picks_sql(org_id))


def picks_params(model: str, *, angle: str, tier: str | None, k: int = 3) -> list[Any]:
    """``picks_sql``'s parameters (checked: a bad angle, tier or k is ``ValidationFailed``)."""
    _check_label("angle", angle)
    if tier is not None:
        _check_label("tier", tier)
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_K:
        raise ValidationFailed(f"k must be an integer in 1..{MAX_K}")
    return [tier, angle, model, k, k, model, angle, k, k]


def picked(row: Mapping[str, Any]) -> Picked:
    """A row of ``picks`` as a ``Picked``."""
    tags = row["tags"]
    return Picked(
        int(row["id"]),
        row["title"],
        row["content"],
        tags if isinstance(tags, dict) else json.loads(tags),
        float(row["similarity"]),
        str(row["selected_by"]),
    )


def select(
    cur: Any,
    org_id: str,
    vector: Sequence[float],
    model: str,
    *,
    angle: str,
    tier: str | None,
    k: int = 3,
) -> list[Picked]:
    """The ``k`` exemplars for a message in ``angle`` (and ``tier``), best first."""
    params = [VectorParam(vector), *picks_params(model, angle=angle, tier=tier, k=k)]
    return [picked(r) for r in fetch_all(cur, select_sql(org_id), params)]


def record(cur: Any, org_id: str, approval_item_id: str, outcome: str) -> bool:
    """Set the outcome of the approved message ``approval_item_id``; False when it holds no
    KC-08 chunk (approved before messages became exemplars, or erased) or had that outcome.

    The caller decides that the outcome moves forward (``colony.store.outbound.outbox.set_status``).
    The org's tier lock is held shared, as by every writer, so the org's move to its own
    partition cannot lose the update."""
    if outcome not in OUTCOMES:
        expected = ", ".join(OUTCOMES)
        raise ValidationFailed(f"unknown outcome {outcome!r}; expected one of {expected}")
    cur.execute(_LOCK_TIER, (tiering.tier_lock_key(org_id),))
    cur.execute(_RECORD, (outcome, org_id, approval_item_id, outcome))
    return max(cur.rowcount, 0) > 0


def message_tags(payload: Mapping[str, Any], *, angle: str | None, persona: str | None) -> dict:
    """The tags an approved message's KC-08 chunk carries (strings only, none empty)."""
    tags = {
        "angle": angle,
        "tier": payload.get("tier"),
        "step": str(int(payload.get("sequence_step") or 1)),
        "persona": persona,
        "campaign_id": payload.get("campaign_id"),
        "contact_id": payload.get("contact_id"),
    }
    return {k: str(v)[:MAX_TAG] for k, v in tags.items() if v not in (None, "")}


def _check_label(name: str, value: Any) -> None:
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_TAG:
        raise ValidationFailed(f"the {name} must be a non-empty string of at most {MAX_TAG}")
