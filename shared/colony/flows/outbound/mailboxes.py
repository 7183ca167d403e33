"""An org's sender mailboxes (issue 39 item 2): the addresses its mail goes from, managed by
its admins (``colony.admin.mailboxes``, ``colony org mailboxes``).

    ``add``: the address must be on one of the org's verified sending domains (a pending,
        paused or unknown domain, or another org's, is refused: 422 naming what to do), not
        already one of its mailboxes (409), with a display name, a daily limit and a
        warm-up ramp whose numbers agree (``policy.mailboxes.check_ramp``), and optionally
        the person it belongs to (``user_id``: an active person of the org, else 422); audited
    ``change``: display name, limit, ramp, its person (``user_id``; null: the team's; a
        mailbox of someone who left resumes only once given to someone else), or ``status``
        (``paused``: its contacts' mail waits and new contacts go to the others; ``active``
        again: what waited in the org is handed back to the send step); audited
    ``listing``: each with today's limit (from the ramp), what it sent today, and whether
        it takes mail now and, when not, why (paused, its domain paused, its grant not
        connected or revoked)

A mailbox's domain stays bound to it: when the daily DNS check pauses the domain
(``sending_domains.recheck``), its mailboxes take no new contacts and their mail waits
(``flows.outbound.senders``); when the domain passes again they go on. An API mailbox
(``gmail``, ``graph``) sends only once its OAuth grant is connected
(``flows.outbound.mailbox_grants``).
"""

from __future__ import annotations

from datetime import date
from typing import Any

from colony.contracts.mailboxes import MailboxAdd, MailboxChange
from colony.errors import Conflict, NotFound, Unprocessable, ValidationFailed
from colony.flows.deps import FlowDeps
from colony.flows.outbound.send_queue import schedule_send
from colony.policy import mailboxes as rules
from colony.store import claims, orgdata
from colony.store.approvals import audit
from colony.store.db import Row
from colony.store.outbound import mailboxes as repo
from colony.store.outbound import sending_domains as domains_repo
from colony.store.tenants import members

DOMAIN_KIND = "sending_domain"  # resource_claims kind of a verified domain


class MailboxExists(Conflict):
    code = "mailbox_exists"


def ramp_of(row: Row) -> rules.Ramp:
    return rules.Ramp(
        int(row["daily_limit"]),
        row["warmup_start"],
        int(row["warmup_days"]),
        int(row["warmup_first"]),
    )


def why_not(row: Row) -> str | None:
    """Why the mailbox sends nothing now (None: it sends)."""
    if row["status"] != "active" and row["person_status"] == "left":
        return f"paused: its person {row['user_id']} left; give it to someone to resume it"
    if row["status"] != "active":
        return "paused by an admin"
    if row["domain_status"] != "verified":
        return f"its domain {row['domain']} is {row['domain_status']}: its DNS does not pass"
    if row["kind"] != "provider" and row["grant_status"] != "connected":
        if row["grant_status"] == "revoked":
            return f"its grant was revoked ({row['grant_reason'] or 'refused'}): connect it again"
        return "its mailbox is not connected yet: connect it"
    return None


def shown(row: Row, today: date, used: int = 0) -> dict[str, Any]:
    """A mailbox as an admin sees it (never a token or a secret's name)."""
    ramp = ramp_of(row)
    return {
        "id": row["id"],
        "address": row["address"],
        "display_name": row["display_name"],
        "kind": row["kind"],
        "daily_limit": ramp.daily_limit,
        "warmup": {
            "start": ramp.warmup_start.isoformat() if ramp.warmup_start else None,
            "days": ramp.warmup_days,
            "first": ramp.warmup_first,
        },
        "limit_today": ramp.limit_on(today),
        "sent_today": used,
        "status": row["status"],
        "user_id": row["user_id"],
        "domain_status": row["domain_status"],
        "grant": {
            "status": row["grant_status"],
            "reason": row["grant_reason"],
            "expires_at": _iso(row["grant_expires_at"]),
        },
        "sending": why_not(row) is None,
        "waits_because": why_not(row),
    }


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def listing(deps: FlowDeps, org_id: str) -> dict[str, Any]:
    today = deps.clock().date()
    with deps.db.transaction(org_id) as cur:
        _org(cur, org_id)
        rows = repo.listing(cur)
        used = repo.used_on(cur, [r["id"] for r in rows], today, "") if rows else {}
    return {"mailboxes": [shown(r, today, used.get(r["id"], 0)) for r in rows]}


def get(deps: FlowDeps, org_id: str, mailbox_id: str) -> dict[str, Any]:
    with deps.db.transaction(org_id) as cur:
        row = _mailbox(cur, mailbox_id)
    return shown(row, deps.clock().date())


def add(deps: FlowDeps, org_id: str, body: MailboxAdd, actor: str) -> dict[str, Any]:
    """Add a mailbox on one of the org's verified sending domains."""
    try:
        address, domain = rules.address(body.address)
        ramp = rules.check_ramp(
            rules.Ramp(body.daily_limit, body.warmup_start, body.warmup_days, body.warmup_first)
        )
    except ValidationFailed as error:
        raise Unprocessable(str(error)) from None
    fields = {
        "address": address,
        "domain": domain,
        "display_name": body.display_name,
        "kind": body.kind,
        "daily_limit": ramp.daily_limit,
        "warmup_start": ramp.warmup_start,
        "warmup_days": ramp.warmup_days,
        "warmup_first": ramp.warmup_first,
        "user_id": body.user_id,
    }
    with deps.db.transaction(org_id) as cur:
        _org(cur, org_id)
        if body.user_id is not None:
            _person(cur, body.user_id)
        verified = domains_repo.get(cur, domain)
        held = claims.held(cur, DOMAIN_KIND, domain)
        if verified is None or verified["status"] != "verified" or not held:
            state = "not one of this organisation's sending domains"
            if verified is not None and held:
                state = f"{verified['status']}: its DNS must pass first"
            elif verified is not None:
                state = "not verified yet: publish its records and add the domain again"
            raise Unprocessable(
                f"{address} is on {domain}, which is {state} (see /orgs/{org_id}/sending-domains)"
            )
        mailbox_id = repo.add(cur, org_id, fields, actor)
        if mailbox_id is None:
            raise MailboxExists(f"{address} is already one of this organisation's mailboxes")
        _audit(cur, org_id, actor, "mailbox.add", {"mailbox_id": mailbox_id, "kind": body.kind})
        row = repo.get(cur, mailbox_id)
    assert row is not None
    return shown(row, deps.clock().date())


def change(
    deps: FlowDeps, org_id: str, mailbox_id: str, body: MailboxChange, actor: str
) -> dict[str, Any]:
    """Change a mailbox; resuming one hands what waited for it back to the send queue."""
    changes = body.model_dump(exclude_unset=True)
    if not changes:
        raise Unprocessable(
            "name at least one of: " + ", ".join(sorted(MailboxChange.model_fields))
        )
    with deps.db.transaction(org_id) as cur:
        row = _mailbox(cur, mailbox_id)
        ramp = ramp_of(row)
        merged = {
            "daily_limit": changes.get("daily_limit", ramp.daily_limit),
            "warmup_start": changes.get("warmup_start", ramp.warmup_start),
            "warmup_days": changes.get("warmup_days", ramp.warmup_days),
            "warmup_first": changes.get("warmup_first", ramp.warmup_first),
        }
        try:
            rules.check_ramp(rules.Ramp(**merged))
        except ValidationFailed as error:
            raise Unprocessable(str(error)) from None
        if any(v is None for k, v in changes.items() if k not in ("warmup_start", "user_id")):
            raise Unprocessable("only warmup_start and user_id may be set to null")
        if changes.get("user_id") is not None:
            _person(cur, changes["user_id"])
        owner = changes.get("user_id", row["user_id"])
        if changes.get("status") == "active" and owner is not None:
            # a leaver's mailbox was paused when they left: it sends again only once it is
            # given to an active person or to the team
            _person(cur, owner, "status: its person")
        repo.update(cur, mailbox_id, changes)
        _audit(cur, org_id, actor, "mailbox.change", {"mailbox_id": mailbox_id, **_named(changes)})
        resumed = repo.waiting(cur) if changes.get("status") == "active" else []
        row = _mailbox(cur, mailbox_id)
    if resumed:
        stamp = int(deps.clock().timestamp())
        for outbox_id in resumed:
            schedule_send(deps, org_id, outbox_id, attempt=f"resumed-{stamp}")
    return shown(row, deps.clock().date()) | {"resumed": len(resumed)}


def _named(changes: dict[str, Any]) -> dict[str, Any]:
    return {k: (v.isoformat() if isinstance(v, date) else v) for k, v in changes.items()}


def _org(cur: Any, org_id: str) -> None:
    if not orgdata.org_exists(cur, org_id):
        raise NotFound(f"org {org_id!r} does not exist")


def _person(cur: Any, user_id: str, field: str = "user_id:") -> None:
    """Refuse anyone but an active person of the org (another org's user is not seen: RLS)."""
    person = members.get(cur, user_id)
    if person is None or not person.active:
        state = "has left" if person is not None else "is not a person of"
        raise Unprocessable(f"{field} {user_id[:128]!r} {state} this organisation")


def _mailbox(cur: Any, mailbox_id: str) -> Row:
    row = repo.get(cur, mailbox_id)
    if row is None:
        raise NotFound(f"mailbox {mailbox_id[:64]!r} does not exist in this organisation")
    return row


def _audit(cur: Any, org_id: str, actor: str, action: str, detail: dict[str, Any]) -> None:
    audit.append(cur, org_id, audit.Entry("effect", actor, "admin", action, detail=detail))
