"""The soak's checks, each computed from what was observed: the SMTP server's received
mail, the model stand-in's request log, the injector's record, the sampler's readings and
the database. Each returns a dict with ``ok``; ``bench/soak.py`` prints them as fields."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable
from typing import Any

from colony.local.soak.injector import Injected
from colony.local.soak.world import Tenant
from colony.registry.functions import FUNCTIONS, pool_size
from colony.store import Database
from colony.store import soak as rows
from colony.testing.chaos_model import FAULTS, Logged
from colony.testing.smtp_server import Received

FINAL_OUTBOX = {"sent", "delivered", "bounced", "complained", "replied", "blocked", "suppressed"}
RECEIVED_OUTBOX = {"sent", "delivered", "complained", "replied"}  # the relay took these
CALLER_GRACE_S = 130.0  # a killed caller's answered call: up to a push's ack deadline before
MODEL_FUNCTIONS = {n for n, f in FUNCTIONS.items() if f.agent}
RSS_GROWTH_LIMIT = 0.25  # after warm-up, the last quarter's median over the first quarter's
RSS_MIN_KB = 32 * 1024  # and by more than this: lazily loaded modules are not a leak
RSS_MIN_SAMPLES = 8


def contacts(db: Database, tenants: list[Tenant], runs: dict[str, str]) -> dict[str, Any]:
    """Every contact in a terminal state or waiting for a person."""
    states: Counter[str] = Counter()
    for tenant in tenants:
        with db.transaction(tenant.org_id) as cur:
            found = rows.contact_states(cur, [runs[tenant.org_id]], list(tenant.contact_ids))
        for row in found:
            states[_state(row)] += 1
    stuck = sum(n for s, n in states.items() if s.startswith("stuck"))
    return {"ok": stuck == 0, "states": dict(sorted(states.items())), "stuck": stuck}


def _state(row: Any) -> str:
    item, out = row["item_status"], row["outbox_status"]
    if out is not None:
        return f"message_{out}" if out in FINAL_OUTBOX else f"stuck_message_{out}"
    if item == "pending":
        return "waiting_for_person"
    if item == "rejected":
        return "rejected"
    if item is not None:
        return f"stuck_{item}_without_message"
    return "done_without_message" if row["chain_done"] else "stuck_in_chain"


def exactly_once(db: Database, orgs: Iterable[str], received: list[Received]) -> dict[str, Any]:
    """Every approved message received once by Message-ID, nothing received that is not one."""
    seen = Counter(str(r.message["Message-ID"]) for r in received)
    expected: set[str] = set()
    for org in orgs:
        with db.transaction(org) as cur:
            for row in rows.outbox(cur):
                if (
                    row["item_status"] in ("approved", "applied")
                    and row["status"] in RECEIVED_OUTBOX
                ):
                    expected.add(str(row["message_id"]))
    duplicates = {mid: n for mid, n in seen.items() if n > 1}
    missing = expected - set(seen)
    unexpected = set(seen) - expected
    return {
        "ok": not duplicates and not missing and not unexpected,
        "approved_and_sent": len(expected),
        "received": sum(seen.values()),
        "duplicates": sum(n - 1 for n in duplicates.values()),
        "missing": len(missing),
        "unexpected": len(unexpected),
    }


def model_calls(
    db: Database, orgs: Iterable[str], log: list[Logged], injected: Injected
) -> dict[str, Any]:
    """Calls made = calls needed + retries of failed ones.

    Needed: one answered call per distinct request (``content_key``). A request answered
    more than once is a retry only if its first answer may have reached a caller that died
    before committing (a function killed, or the database restarted, within a push's ack
    deadline after it); any other repeat recomputed a committed step.
    """
    outcomes = Counter(entry.outcome for entry in log)
    answered: dict[str, list[float]] = {}
    for entry in log:
        if entry.outcome == "ok":
            answered.setdefault(entry.key, []).append(entry.at)
    faults = [t for t, name in injected.kills if name in MODEL_FUNCTIONS]
    faults += [began for began, _ in injected.pg_restarts]
    explained = recomputed = 0
    for times in answered.values():
        for earlier in sorted(times)[:-1]:
            if any(earlier <= t <= earlier + CALLER_GRACE_S for t in faults):
                explained += 1
            else:
                recomputed += 1
    recorded = 0
    for org in orgs:
        with db.transaction(org) as cur:
            recorded += rows.llm_calls(cur)
    failed = sum(outcomes[f] for f in FAULTS)
    needed = len(answered)
    return {
        "ok": recomputed == 0 and outcomes["other"] == 0 and recorded <= outcomes["ok"],
        "made": len(log),
        "needed": needed,
        "retries_of_failed": failed + explained,
        "failed_by_fault": {f: outcomes[f] for f in FAULTS},
        "answered": outcomes["ok"],
        "answered_again_after_a_caller_died": explained,
        "recomputed": recomputed,
        "recorded_llm_calls": recorded,
        "balance": len(log) == needed + failed + explained + recomputed + outcomes["other"],
    }


def leases(db: Database, orgs: Iterable[str]) -> dict[str, Any]:
    """No claim held past its lease: a lapsed one was taken over or released."""
    total: Counter[str] = Counter()
    for org in orgs:
        with db.transaction(org) as cur:
            total.update(rows.lapsed_leases(cur))
    return {"ok": sum(total.values()) == 0, **dict(total)}


def dead_letters(
    db: Database, orgs: Iterable[str], in_memory: int, unrecorded: int
) -> dict[str, Any]:
    """Every dead letter explained: recorded with the error that ended its attempts."""
    reasons: Counter[str] = Counter()
    recorded = 0
    for org in orgs:
        with db.transaction(org) as cur:
            for row in rows.dead_letters(cur):
                recorded += 1
                reasons[_reason(str(row["last_error"]))] += 1
    unexplained = reasons.get("", 0) + unrecorded
    return {
        "ok": unexplained == 0 and recorded + unrecorded == in_memory,
        "count": recorded + unrecorded,
        "reasons": dict(reasons),
        "unexplained": unexplained,
    }


def _reason(error: str) -> str:
    return error.split(":", 1)[0].strip()[:40]


def rss(samples: dict[str, list[tuple[float, int, int]]], warm_after: float) -> dict[str, Any]:
    """Each function's memory not growing after warm-up: per server process (a restart
    starts afresh; its first third of samples is its own warm-up), the median of its last
    quarter of samples over its first quarter's."""
    growth: dict[str, float] = {}
    grown: dict[str, float] = {}
    for name, series in samples.items():
        if not series:
            continue
        pid = series[-1][1]
        mine = [kb for t, p, kb in series if p == pid and t >= warm_after and kb > 0]
        kept = mine[len(mine) // 3 :]  # a restarted server warms up too: its first third
        if len(kept) < RSS_MIN_SAMPLES:
            continue
        q = len(kept) // 4
        first, last = statistics.median(kept[:q]), statistics.median(kept[-q:])
        growth[name] = round(last / first - 1, 3) if first else 0.0
        grown[name] = last - first
    worst = max(growth.items(), key=lambda kv: kv[1], default=("", 0.0))
    grew = {n: g for n, g in growth.items() if g > RSS_GROWTH_LIMIT and grown[n] > RSS_MIN_KB}
    return {
        "ok": bool(growth) and not grew,
        "functions_measured": len(growth),
        "worst": {"function": worst[0], "growth": worst[1]},
        "grew": grew,
        "limit": RSS_GROWTH_LIMIT,
    }


def connections(
    readings: list[tuple[float, int]], names: Iterable[str], own: int, parallelism: int
) -> dict[str, Any]:
    """Database connections never above the budget: docs/deploy.md's rule, one instance of
    each function here (its pool, and the chat function's LISTEN), plus this process's own."""
    budget = sum(pool_size(n, parallelism) for n in names) + ("chat" in names) + own
    peak = max((n for _, n in readings), default=0)
    return {
        "ok": bool(readings) and peak <= budget,
        "peak": peak,
        "budget": budget,
        "samples": len(readings),
    }
