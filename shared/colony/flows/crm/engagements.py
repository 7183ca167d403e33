"""Activity logged where the team looks (issue 36 item 3): a sent message, a reply received
and a call's summary, each an engagement on the HubSpot contact and deal linked to ours.

    the send is confirmed (``flows.outbound.sending``) ─► ``log_later(…, "email", outbox id)``
    a reply is stored (``flows.outbound.replies``)     ─► ``log_later(…, "reply", reply id)``
    a call's follow-up is approved (``flows.recordings.follow_up``)
                                                   ─► ``log_later(…, "call", recording id)``
        each in the transaction that recorded it: a push (``flows.crm.pushes``), for an org
        with a live HubSpot connection only
    the task ─► ``log``: the text read from our row ─► the linked contact and deal
        ─► ``log_engagement`` keyed by our id (``email:<outbox id>``, ``reply:<reply id>``,
           ``call:<recording id>``): a retried task finds the key in ``crm_writes`` and logs
           nothing twice

A reply is an email with direction inbound; a call is a call engagement whose body is
AGT-006's summary: a model's words, so it leaves only with a person's act on that call (the
approval of its follow-up), never when the summary is made. With neither the contact nor
the deal linked there is nothing to log it on: ``unlinked``. The text goes to the org's own
CRM only: no log line carries it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from colony.errors import NotFound, ValidationFailed
from colony.flows.crm.pushes import PROVIDER, CrmParts, Unavailable, queue, with_client
from colony.flows.deps import FlowDeps
from colony.ports import Engagement
from colony.store.crm import links, sources
from colony.store.crm import pushes as repo

Source = Literal["email", "reply", "call"]
MAX_BODY = 60_000  # HubSpot keeps an email's text to 64 KB


def log_later(deps: FlowDeps, cur: Any, org_id: str, kind: Source, source_id: str) -> None:
    """In the transaction that recorded it: the engagement pushed, if the org has HubSpot."""
    queue(deps, cur, org_id, kind, source_id, record=False)


def _linked(cur: Any, object_type: str, entity_id: Any) -> tuple[str, ...]:
    if not entity_id:
        return ()
    link = links.for_entity(cur, PROVIDER, object_type, str(entity_id))
    return (link.remote_id,) if link is not None and link.live else ()


def log(deps: FlowDeps, parts: CrmParts, org_id: str, push: Mapping[str, Any]) -> dict[str, Any]:
    """One engagement logged on its linked contact and deal, or why not (``pushes.run``)."""
    kind, source_id = str(push["kind"]), str(push["source_id"])
    with deps.db.transaction(org_id) as cur:
        row = sources.engagement_source(cur, kind, source_id)
        if row is None:
            raise Unavailable("refused", f"the {kind} is not there to log (erased, or not sent)")
        contacts = _linked(cur, "contact", row["contact_id"])
        deals = _linked(cur, "deal", row["deal_id"])
    if not contacts and not deals:
        raise Unavailable("unlinked", "neither the contact nor the deal is linked to HubSpot")
    engagement = Engagement(
        kind="call" if kind == "call" else "email",
        key=f"{kind}:{source_id}",
        timestamp=_when(row["at"], deps.clock()),
        body=str(row["body"] or "")[:MAX_BODY],
        subject=str(row["subject"] or "")[:500] or None,
        direction="inbound" if kind == "reply" else "outbound",
        contact_ids=contacts,
        deal_ids=deals,
    )
    try:
        made = with_client(deps, parts, org_id, lambda crm: crm.log_engagement(engagement))
    except NotFound:
        raise Unavailable("unlinked", "a linked HubSpot record no longer exists") from None
    except ValidationFailed as error:
        raise Unavailable("refused", str(error)) from None
    with deps.db.transaction(org_id) as cur:
        repo.settle(cur, str(push["id"]), "written", None, remote_id=made.id)
    return {"status": "written", "remote_id": made.id, "created": made.created}


def _when(at: Any, now: datetime) -> str:
    when = at if isinstance(at, datetime) else now
    return when.isoformat()
