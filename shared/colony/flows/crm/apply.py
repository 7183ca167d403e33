"""What a HubSpot contact, company or deal becomes here, and applying a batch of them (the
backfill's pages, the webhook's and the reconciliation's reads alike).

    contact ─► ``contacts`` (name from first and last name, else the email, else its id;
        company and domain from its first associated company's link) ─► its link
    company ─► its link only (we have no company table: name and domain kept on the link,
        for the contacts that name it)
    deal ─► ``deals`` (the stage through the org's mapping; the contact its first associated
        contact's row) ─► its link; a deal whose pipeline stage has no mapping is held: its
        link keeps what was read, flagged ``pipeline/stage``, until an admin maps it

A record is applied only if it is newer than what its link says was applied last
(``updatedAt``): a duplicate or an out-of-order read changes nothing. A contact of ours that
no CRM record is linked to yet (an earlier CSV import) is adopted by its email, not twinned;
a deal of ours is adopted when the HubSpot deal names it in ``colony_deal_id`` (``ADOPT_KEY``:
our deal's id or external id, as a team that brought our deals into HubSpot keeps them).
What a person should know (a contact without email, an amount that is not a number, a held
deal) comes back as ``notes``; nothing is dropped.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from colony.ports import CrmObjectType, CrmRecord
from colony.store.crm import records as repo

PROVIDER = "hubspot"
SINGULAR: dict[CrmObjectType, str] = {
    "contacts": "contact",
    "companies": "company",
    "deals": "deal",
}
PROPERTIES: dict[CrmObjectType, tuple[str, ...]] = {
    "companies": ("name", "domain"),
    "contacts": ("email", "firstname", "lastname", "jobtitle"),
    "deals": ("dealname", "dealstage", "pipeline", "amount", "closedate", "colony_deal_id"),
}
ADOPT_KEY = "colony_deal_id"  # a HubSpot deal property naming our deal (docs/crm.md)
# Whose associations a record's row needs: a contact its company, a deal its contact.
ASSOCIATED: dict[CrmObjectType, CrmObjectType | None] = {
    "companies": None,
    "contacts": "companies",
    "deals": "contacts",
}
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True, slots=True)
class Note:
    """A record kept with something a person should know (``import_errors`` of a backfill)."""

    object_type: str
    remote_id: str
    field: str | None
    reason: str


@dataclass
class Outcome:
    created: int = 0
    updated: int = 0
    unchanged: int = 0  # not newer than what was applied (a duplicate, an older read)
    held: int = 0  # deals kept until their stage is mapped
    notes: list[Note] = field(default_factory=list)

    def add(self, other: Outcome) -> None:
        self.created += other.created
        self.updated += other.updated
        self.unchanged += other.unchanged
        self.held += other.held
        self.notes += other.notes


def when(stamp: str | None) -> datetime | None:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")) if stamp else None


def stage_key(pipeline: str | None, stage: str | None) -> str:
    return f"{pipeline or 'default'}/{stage or ''}"


def apply(
    cur: Any,
    org_id: str,
    object_type: CrmObjectType,
    records: Sequence[CrmRecord],
    associated: Mapping[str, Sequence[str]],
    stages: Mapping[tuple[str, str], str],
    *,
    force: bool = False,
) -> Outcome:
    """Apply ``records`` of one type (``associated``: each id → the ids of ``ASSOCIATED``).
    ``force``: apply even if not newer (a held deal released by a new mapping)."""
    kind = SINGULAR[object_type]
    seen = repo.links(cur, PROVIDER, kind, [r.id for r in records])
    outcome = Outcome()
    fresh = []
    for record in records:
        link = seen.get(record.id)
        if not force and link is not None and _applied(link, record, kind):
            outcome.unchanged += 1
        else:
            fresh.append(record)
    if not fresh:
        return outcome
    if object_type == "companies":
        _companies(cur, org_id, fresh, seen, outcome)
    elif object_type == "contacts":
        _contacts(cur, org_id, fresh, seen, associated, outcome)
    else:
        _deals(cur, org_id, fresh, seen, associated, stages, outcome)
    return outcome


def _applied(link: Mapping[str, Any], record: CrmRecord, kind: str) -> bool:
    """Whether the link already holds this version (or a newer one) of a live record."""
    if link["archived_at"] is not None or link["merged_into"] is not None:
        return False  # read live now: it came back (restored), so it is applied again
    if kind != "company" and not link["entity_id"]:
        return False  # a held deal: decided again (its stage may be mapped by now)
    applied, updated = link["remote_updated_at"], when(record.updated_at)
    return applied is not None and updated is not None and applied >= updated


def _link(record: CrmRecord, entity: str | None, held: str | None = None) -> dict[str, Any]:
    return {
        "remote_id": record.id,
        "entity_id": entity,
        "remote_updated_at": record.updated_at,
        "properties": dict(record.properties),
        "unmapped_stage": held,
    }


def _companies(
    cur: Any, org: str, fresh: Sequence[CrmRecord], seen: Mapping[str, Any], out: Outcome
) -> None:
    for record in fresh:
        if record.id in seen:
            out.updated += 1
        else:
            out.created += 1
    repo.put_links(cur, org, PROVIDER, "company", [_link(r, None) for r in fresh])


def contact_name(record: CrmRecord) -> str:
    p = record.properties
    name = f"{p.get('firstname') or ''} {p.get('lastname') or ''}".strip()
    return name or (p.get("email") or "").strip() or f"HubSpot contact {record.id}"


def _contacts(
    cur: Any,
    org: str,
    fresh: Sequence[CrmRecord],
    seen: Mapping[str, Any],
    associated: Mapping[str, Sequence[str]],
    out: Outcome,
) -> None:
    firms = [ids[0] for r in fresh if (ids := associated.get(r.id))]
    companies = repo.links(cur, PROVIDER, "company", firms)
    emails = [
        e
        for r in fresh
        if (e := r.properties.get("email")) and not (seen.get(r.id) or {}).get("entity_id")
    ]
    adoptable = repo.unlinked_contacts_by_email(cur, emails)
    rows, links = [], []
    for record in fresh:
        p = record.properties
        email = (p.get("email") or "").strip() or None
        link = seen.get(record.id)
        entity = (link or {}).get("entity_id") or (
            adoptable.pop(email.lower(), None) if email else None
        )
        out.created += entity is None
        out.updated += entity is not None
        entity = entity or str(uuid.uuid4())
        firm_ids = associated.get(record.id) or ()
        firm = companies.get(firm_ids[0]) if firm_ids else None
        firm_props = (firm or {}).get("properties") or {}
        if email is None:
            out.notes.append(
                Note("contact", record.id, "email", "no email in HubSpot: kept, cannot be emailed")
            )
        rows.append(
            {
                "id": entity,
                "external_id": f"hubspot:{record.id}",
                "name": contact_name(record)[:500],
                "title": p.get("jobtitle"),
                "email": email,
                "company": firm_props.get("name") or "",
                "company_domain": firm_props.get("domain"),
            }
        )
        links.append(_link(record, entity))
    repo.put_contacts(cur, org, rows)
    repo.put_links(cur, org, PROVIDER, "contact", links)


def _deals(
    cur: Any,
    org: str,
    fresh: Sequence[CrmRecord],
    seen: Mapping[str, Any],
    associated: Mapping[str, Sequence[str]],
    stages: Mapping[tuple[str, str], str],
    out: Outcome,
) -> None:
    people = [ids[0] for r in fresh if (ids := associated.get(r.id))]
    contacts = repo.links(cur, PROVIDER, "contact", people)
    keys = [
        k
        for r in fresh
        if (k := (r.properties.get(ADOPT_KEY) or "").strip())
        and not (seen.get(r.id) or {}).get("entity_id")
    ]
    adoptable = repo.unlinked_deals_by_key(cur, keys)
    rows, links = [], []
    for record in fresh:
        p = record.properties
        pipeline, stage = p.get("pipeline") or "default", p.get("dealstage") or ""
        ours = stages.get((pipeline, stage))
        contact_ids = list(associated.get(record.id) or ())
        if ours is None:
            held = stage_key(pipeline, stage)
            out.held += 1
            reason = f"HubSpot stage {held!r} has no mapping: kept until an admin maps it"
            out.notes.append(Note("deal", record.id, "dealstage", reason))
            properties = {**p, "_contacts": contact_ids}
            links.append({**_link(record, None, held), "properties": properties})
            continue
        key = (p.get(ADOPT_KEY) or "").strip()
        entity = (seen.get(record.id) or {}).get("entity_id") or (
            adoptable.pop(key, None) if key else None
        )
        out.created += entity is None
        out.updated += entity is not None
        entity = entity or str(uuid.uuid4())
        contact = contacts.get(contact_ids[0]) if contact_ids else None
        value = None
        if p.get("amount"):
            try:
                value = str(Decimal(str(p["amount"])).quantize(Decimal("0.01")))
            except InvalidOperation:
                out.notes.append(Note("deal", record.id, "amount", "amount is not a number"))
        close = p.get("closedate") or ""
        rows.append(
            {
                "id": entity,
                "external_id": f"hubspot:{record.id}",
                "contact_id": (contact or {}).get("entity_id"),
                "name": (p.get("dealname") or f"HubSpot deal {record.id}")[:500],
                "stage": ours,
                "value": value,
                "close_date": close[:10] if _DATE.match(close) else None,
            }
        )
        links.append({**_link(record, entity), "properties": {**p, "_contacts": contact_ids}})
    repo.put_deals(cur, org, rows)
    repo.put_links(cur, org, PROVIDER, "deal", links)
