"""Who owns what (issue 35 items 1 and 2): prospects and deals have an owner, one of the org's
people; a person who leaves hands everything on; an admin may reassign; rules assign the rest.

    a person leaves (Clerk, or a resync) ─► hand_over: their prospects, deals and waiting
        items to the org's named backup (else its longest-standing admin, else any active
        person; nobody left: the team's, unassigned), one 'assignment' audit entry; their
        sender mailboxes are paused, not handed on (docs/mailboxes.md), one 'mailbox.pause'
        entry
    an admin reassigns (admin API, CLI) ─► reassign: one record, to an active person of the
        org (anyone else is refused, another org's user included), its waiting items follow,
        audited with who did it and from whom to whom
    imports, a CRM sync, a resync ─► assign_unowned: every prospect with no owner by the
        org's rules (``colony.policy.assignment``), then unowned deals to their prospect's
        owner, else round robin; audited as one entry with the counts

Nothing is ever left owned by someone who left: hand_over runs in the transaction that marks
them gone. Each entry is audited in the transaction that made the change.
"""

from __future__ import annotations

from typing import Any

from colony.errors import NotFound, Unprocessable
from colony.flows.deps import FlowDeps
from colony.policy import assignment
from colony.store import orgdata
from colony.store.approvals import audit, routing
from colony.store.outbound import mailboxes
from colony.store.tenants import members, ownership, team
from colony.store.tenants.ownership import Subject

PAGE = 500


def hand_over(cur: Any, org_id: str, leaver: str, actor: str) -> dict[str, Any]:
    """Everything ``leaver`` owned or had waiting, to their successor, and their mailboxes
    paused (``mailboxes_paused`` in the result when there were any); audited. Runs inside
    the caller's transaction (the one that marked them gone)."""
    to = ownership.successor(cur, leaver)
    moved = {
        "contacts": ownership.hand_over(cur, "contact", leaver, to),
        "deals": ownership.hand_over(cur, "deal", leaver, to),
        "items": routing.hand_over(cur, leaver, to),
    }
    detail = {"from": leaver, "to": to, **moved}
    if any(moved.values()):
        entry = audit.Entry("assignment", actor, "system", "hand_over", detail=detail)
        audit.append(cur, org_id, entry)
    # their address and name are theirs (and an API mailbox's grant their own consent): it
    # stops taking new contacts and its threads wait until an admin gives it to someone
    paused = mailboxes.pause_person(cur, leaver)
    if paused:
        why = "its person left the organisation"
        entry = audit.Entry(
            "effect",
            actor,
            "system",
            "mailbox.pause",
            reason=why,
            detail={"user_id": leaver, "mailboxes": paused},
        )
        audit.append(cur, org_id, entry)
        detail = detail | {"mailboxes_paused": len(paused)}
    return detail


def reassign(
    deps: FlowDeps, org_id: str, subject: Subject, subject_id: str, to_user: str, actor: str
) -> dict[str, Any]:
    """Give one prospect or deal to ``to_user``, an active person of the org; its waiting
    items follow. ``Unprocessable`` for anyone else (another org's user is not found here:
    RLS), ``NotFound`` for a record the org does not have."""
    with deps.db.transaction(org_id) as cur:
        person = members.get(cur, to_user)
        if person is None or not person.active:
            state = "has left" if person is not None else "is not a person of"
            raise Unprocessable(f"owner: {to_user!r} {state} this organisation")
        row = ownership.set_owner(cur, subject, subject_id, to_user)
        if row is None:
            raise NotFound(f"{subject} {subject_id!r} does not exist in this organisation")
        follow = routing.follow_contact if subject == "contact" else routing.follow_deal
        items = follow(cur, subject_id, to_user)
        detail = {
            "subject": subject,
            "id": subject_id,
            "from": row["previous"],
            "to": to_user,
            "items": items,
        }
        audit.append(
            cur, org_id, audit.Entry("assignment", actor, "admin", "reassign", detail=detail)
        )
    return detail


def assign_unowned(deps: FlowDeps, org_id: str, actor: str) -> dict[str, Any]:
    """Every prospect without an owner assigned by the org's rules, then every deal without
    one (its prospect's owner, else round robin); audited once with the counts. An org with
    no active person assigns nothing (and says so)."""
    with deps.db.transaction(org_id) as cur:
        if not orgdata.org_exists(cur, org_id):
            raise NotFound(f"org {org_id!r} does not exist")
        people = [m.user_id for m in members.active(cur)]
        if not people:
            return {"contacts": 0, "deals": 0, "reason": "the organisation has no active people"}
        rules = assignment.parse(team.get(cur)["assignment"])
        contacts = _assign_contacts(cur, org_id, rules, people)
        deals = len(ownership.deals_follow_contacts(cur))
        deals += _assign_deals(cur, org_id, people)
        detail = {"contacts": contacts, "deals": deals}
        if contacts or deals:
            entry = audit.Entry("assignment", actor, "system", "assign_unowned", detail=detail)
            audit.append(cur, org_id, entry)
    return detail


def _assign_contacts(cur: Any, org_id: str, rules: list[assignment.Rule], people: list[str]) -> int:
    done, after = 0, ""
    cursors: dict[str, str | None] = {}
    while page := ownership.unowned_contacts(cur, after, PAGE):
        picks = []
        for prospect in page:
            pool = assignment.pool_for(prospect, rules, people)
            picks.append((str(prospect["id"]), _next(cur, cursors, pool)))
        done += ownership.set_many(cur, "contact", picks)
        after = str(page[-1]["id"])
    _save(cur, org_id, cursors)
    return done


def _assign_deals(cur: Any, org_id: str, people: list[str]) -> int:
    done, after = 0, ""
    cursors: dict[str, str | None] = {}
    while page := ownership.unowned_deals(cur, after, PAGE):
        done += ownership.set_many(cur, "deal", [(d, _next(cur, cursors, people)) for d in page])
        after = page[-1]
    _save(cur, org_id, cursors)
    return done


def _next(cur: Any, cursors: dict[str, str | None], pool: list[str]) -> str:
    """Round robin within ``pool``, its cursor read (and locked) once per run."""
    key = assignment.pool_key(pool)
    if key not in cursors:
        cursors[key] = ownership.last_in_pool(cur, key)
    pick = assignment.next_in(pool, cursors[key])
    cursors[key] = pick
    return pick


def _save(cur: Any, org_id: str, cursors: dict[str, str | None]) -> None:
    for key, last in cursors.items():
        if last is not None:
            ownership.move_cursor(cur, org_id, key, last)
