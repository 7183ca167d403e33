"""Knowledge Core tiering (issue 16): an org that outgrew the shared partition moves to its own.

A write that carries the org past ``tiering.THRESHOLD`` (``SyncResult.outgrown``) and the
daily data-lifecycle run both ``schedule`` the move on ``KC_TIER_QUEUE``, named by the
org, so it is queued once however many writes notice; the data-lifecycle function ``run``s it
(``knowledge.tiering.promote``: online, idempotent, retried when the cutover cannot get its
locks in time). Until it has run, the org is answered exactly from the shared partition:
slower past the threshold, never wrong.
"""

from __future__ import annotations

import json
from typing import Any

from colony.contracts.lifecycle import KcTierTask, LifecycleBody
from colony.flows.deps import FlowDeps
from colony.knowledge import tiering
from colony.registry.functions import KC_TIER_QUEUE, QUEUES


def schedule(deps: FlowDeps, org_id: str) -> str:
    """Queue the org's move (one task per org: a second request is the same task)."""
    body = LifecycleBody(task=KcTierTask(org_id=org_id)).model_dump(mode="json")
    return deps.transport.schedule(
        KC_TIER_QUEUE,
        QUEUES[KC_TIER_QUEUE].target,
        json.dumps(body).encode(),
        task_id=f"kc-tier-{tiering.check_org_literal(org_id)}",
    )


def check(deps: FlowDeps, org_id: str) -> bool:
    """Queue the move if the org outgrew the shared partition; whether it did."""
    with deps.db.transaction(org_id) as cur:
        due = tiering.outgrown(cur, org_id)
    if due:
        schedule(deps, org_id)
    return due


def run(deps: FlowDeps, org_id: str) -> dict[str, Any]:
    """Move the org now (a no-op when it has its partition already)."""
    done = tiering.promote(deps.db, org_id)
    return {
        "org_id": org_id,
        "moved": done.moved,
        "chunks": done.caught_up,
        "stage_s": round(done.stage_s, 3),
        "build_s": round(done.build_s, 3),
        "cutover_ms": round(done.cutover_s * 1000, 1),
    }
