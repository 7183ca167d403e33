"""The org's postal address in the footer of every message (issue 39 item 4; CAN-SPAM).

An admin sets it (``PUT /orgs/{org}/postal-address``; checked by
``colony.policy.postal_address``, audited). Every message's footer prints it above the
unsubscribe link. An org without one cannot send campaign email, and is told so where a
person acts, never by a silent send:

    launching a campaign (the CLI, the chat's launch tool) ─► ``require``: refused
        (``PostalAddressMissing``, 409, saying where to set it)
    approving a campaign's message ─► ``require_for``: the approval is refused the same way
    a campaign message already queued (approved before the address was removed) ─► waits at
        send (``for_footer(...).waiting``), tried again hourly, raised on /overview (``alerts``)

A message outside a campaign (a person's own one-off) still goes, with the footer it can
have: the rule is the brief's, "campaign email".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from colony.errors import Conflict
from colony.flows.deps import FlowDeps
from colony.policy.postal_address import check
from colony.store.approvals import audit
from colony.store.outbound import postal_address as repo

MISSING = (
    "the org has no postal address, and campaign email must carry one (CAN-SPAM): an admin"
    " sets it with PUT /orgs/{org}/postal-address"
)


class PostalAddressMissing(Conflict):
    """Campaign email from an org that has not set its postal address."""

    code = "postal_address_missing"


@dataclass(frozen=True, slots=True)
class Footer:
    """What a message's footer prints above its unsubscribe link (``footer``, ending in a
    line break, or empty), and why the message must wait instead (``waiting``)."""

    footer: str
    waiting: str | None = None


def for_footer(cur: Any, row: Any) -> Footer:
    """The footer for the claimed outbox ``row`` (the org's cursor)."""
    address = repo.get(cur)
    if address:
        return Footer(f"{address}\n")
    if row["campaign_id"]:
        return Footer("", MISSING.format(org="…"))
    return Footer("")


def require_for(cur: Any, org_id: str) -> None:
    """Refuse campaign email from an org without a postal address (inside a transaction)."""
    if repo.get(cur) is None:
        raise PostalAddressMissing(MISSING.format(org=org_id))


def require(deps: FlowDeps, org_id: str) -> None:
    """Refuse a campaign launch from an org without a postal address."""
    with deps.db.transaction(org_id) as cur:
        require_for(cur, org_id)


def alerts(deps: FlowDeps, org_id: str) -> list[dict[str, Any]]:
    """/overview's alert while the org has no postal address and campaign mail waits for it."""
    with deps.db.transaction(org_id) as cur:
        if repo.get(cur) is not None:
            return []
        waiting = repo.campaign_mail_waiting(cur)
    if not waiting:
        return []
    return [
        {
            "kind": "postal_address_missing",
            "message": f"{waiting} campaign message(s) wait for the organisation's postal"
            " address, which every campaign email must carry: an admin sets it in the admin"
            " API (PUT /orgs/{org}/postal-address).".replace("{org}", org_id),
        }
    ]


def get(deps: FlowDeps, org_id: str) -> dict[str, Any]:
    with deps.db.transaction(org_id) as cur:
        return {"postal_address": repo.get(cur)}


def replace(deps: FlowDeps, org_id: str, text: str, actor: str) -> dict[str, Any]:
    """Set the org's postal address (``Unprocessable`` naming what is wrong); audited."""
    address = check(text)
    with deps.db.transaction(org_id) as cur:
        repo.set_address(cur, org_id, address)
        entry = audit.Entry("decision", actor, "admin", "postal_address_set")
        audit.append(cur, org_id, entry)
    return {"postal_address": address}
