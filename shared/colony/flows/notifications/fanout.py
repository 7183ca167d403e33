"""Events into notifications: each event recorded by the flows' own tables (migration 0054's
triggers) or by the brief's calendar is fanned out once to the people who want its kind.

    notification_events (not yet fanned out, locked: SKIP LOCKED, so two runs share the work)
        ─► about a prospect who was erased since?  ─► marked 'erased', nobody told
        ─► the org's active people, each one's channel for the kind (their choice or default)
        ─► Slack: one notification per person and event (key slack:<user>:<kind>:<event>)
        ─► email: the person's open digest (one at a time; due an hour after their last)
        ─► the brief: one notification per person and day, by either channel
        ─► the event marked fanned out, in the same transaction as its items

Every insert is keyed (``notification_items`` is unique per person × kind × event), so a
run that fails half-way and is retried adds nothing twice; a person who left is not among
the active people, and gets nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from colony.flows.deps import FlowDeps
from colony.flows.notifications.kinds import channel_for
from colony.store.approvals import routing
from colony.store.notifications import events, outbox, prefs

BATCH = 500  # events one transaction fans out


def takers(people: Sequence[Mapping[str, Any]], kind: str, channel: str) -> list[str]:
    """The people whose channel for ``kind`` is ``channel`` (and who can be reached by it:
    an email needs an address; Slack is tried and, when it cannot reach them, says so)."""
    chosen = [p for p in people if channel_for(kind, str(p["role"]), p["prefs"] or {}) == channel]
    if channel == "email":
        chosen = [p for p in chosen if p["email"]]
    return [str(p["user_id"]) for p in chosen]


def fan_out(deps: FlowDeps, org_id: str, now: datetime, limit: int = BATCH) -> dict[str, int]:
    """Fan out up to ``limit`` waiting events; counts of what it did."""
    counts = {"events": 0, "erased": 0, "notified": 0}
    with deps.db.transaction(org_id) as cur:
        waiting = events.waiting(cur, limit)
        if not waiting:
            return counts
        everyone = prefs.people(cur)
        # an item waiting is told to whose queue it waits in (issue 35 item 2), the rest to all
        audience = {
            e["id"]: routing.in_queue(cur, str(e["event_key"]), everyone)
            if e["kind"] == "items_waiting"
            else everyone
            for e in waiting
        }
        digest_users = {
            u
            for e in waiting
            if e["kind"] != "brief" and not e["erased"]
            for u in takers(audience[e["id"]], e["kind"], "email")
        }
        digests = {}
        if digest_users:
            outbox.open_digests(cur, org_id, sorted(digest_users), now)
            digests = _digest_ids(cur, sorted(digest_users))
        for event in waiting:
            counts["events"] += 1
            if event["erased"]:
                events.mark(cur, event["id"], "erased", now)
                counts["erased"] += 1
                continue
            told = _one(cur, org_id, event, audience[event["id"]], digests, now)
            counts["notified"] += told
            events.mark(cur, event["id"], "fanned" if told else "nobody", now)
    return counts


def _digest_ids(cur: Any, users: list[str]) -> dict[str, int]:
    return {str(r["user_id"]): int(r["id"]) for r in outbox.locked_digests(cur, users)}


def _one(
    cur: Any,
    org_id: str,
    event: Mapping[str, Any],
    people: Sequence[Mapping[str, Any]],
    digests: Mapping[str, int],
    now: datetime,
) -> int:
    kind, key, event_id = str(event["kind"]), str(event["event_key"]), int(event["id"])
    slack_users = takers(people, kind, "slack")
    email_users = takers(people, kind, "email")
    keyed = [(u, f"slack:{u}:{kind}:{key}") for u in slack_users]
    ids = outbox.add(cur, org_id, "slack", kind, keyed, due_at=now)
    if kind == "brief":  # the brief is its own email, at its time, not part of a digest
        mailed = [(u, f"brief:{u}:{key}") for u in email_users]
        ids += outbox.add(cur, org_id, "email", kind, mailed, due_at=now)
    else:
        ids += [digests[u] for u in email_users if u in digests]
    outbox.carry(cur, event_id, kind, ids)
    return len(slack_users) + len(email_users)
