"""An approved deal update written back to the HubSpot deal, with HubSpot's changes made
since the card was built shown to a person instead of overwritten (issue 36 item 3).

    a ``deal_update`` card is queued (AGT-006, or a person) ─► ``read_later``: if the deal is
        linked and HubSpot connected, a task reads the HubSpot deal's fields (``read_card``)
        and keeps them on the card (``crm_read``: each field's value and when it was set)
    a person approves (or edits and approves) ─► our deal row (``flows.pipeline.deals``) and
        ``write_later``: a push (``flows.crm.pushes``) ─► after the commit, ``write``:
        our fields as HubSpot's (``FIELDS``; the stage through the org's mapping,
        ``store.crm.stages``), each with what the card read ─► ``update_deal``
        ─► ``written``, or HubSpot changed a field since the read: ``conflict``, nothing
           written, and a ``crm_conflict`` card with ours, what we read and theirs now
    a person chooses on that card (``apply_conflict``) ─► ours: written again, against
        HubSpot's value now (a new push of the conflict card) ─► theirs: our deal row takes
        HubSpot's values

A card approved before its read landed (or built before the deal was linked) carries no
read: its write finds HubSpot holding a value we never saw, which is a conflict, so a person
sees HubSpot's value before ours replaces it. An unlinked deal is ``unlinked``, a stage the
org has not mapped ``unmapped``, a value HubSpot refuses ``refused``: recorded, never
retried. Logs carry ids and statuses only.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Any

from colony.contracts.deals import parse_update
from colony.errors import CrmConflict, NotFound, ProviderUnavailable, ValidationFailed
from colony.flows.crm.limits import limit_wait
from colony.flows.crm.pushes import (
    PROVIDER,
    CrmParts,
    PushNotYet,
    Unavailable,
    queue,
    with_client,
)
from colony.flows.deps import FlowDeps
from colony.ports import FieldChange, FieldConflict
from colony.registry.functions import CRM_QUEUE
from colony.runtime.transport import enqueue
from colony.store.approvals import approvals
from colony.store.crm import connections as connection_rows
from colony.store.crm import links, stages
from colony.store.crm import pushes as repo
from colony.store.deals import deals as deal_store

# Our deal's fields and the HubSpot deal properties they are.
FIELDS = {
    "stage": "dealstage",
    "value": "amount",
    "close_date": "closedate",
    "next_action": "hs_next_step",
}
READ_KEY = "crm_read"  # where a card keeps what it read of the HubSpot deal
CONFLICT_KIND = "crm_conflict"


class Unmapped(ValidationFailed):
    """A value of ours the org's CRM has no counterpart for (a stage not mapped)."""


def _linked_deal(cur: Any, deal_id: str) -> str | None:
    link = links.for_entity(cur, PROVIDER, "deal", deal_id)
    return link.remote_id if link is not None and link.live else None


def to_crm(cur: Any, field: str, value: Any) -> str | None:
    """Our field's value as HubSpot writes it."""
    if value is None:
        return None
    if field == "stage":
        mapped = stages.remote_stage(cur, PROVIDER, str(value))
        if mapped is None:
            raise Unmapped(f"our stage {value!r} has no HubSpot stage mapped for this org")
        return mapped[1]
    if field == "value":
        return f"{Decimal(str(value)):.2f}"
    if field == "close_date":
        return f"{str(value)[:10]}T00:00:00.000Z"
    return str(value)


def from_crm(cur: Any, field: str, value: str | None) -> Any:
    """HubSpot's value of a property as our field holds it (None: it has none)."""
    if not value:
        return None
    if field == "stage":
        ours = stages.our_stage(cur, PROVIDER, value)
        if ours is None:
            raise Unmapped(f"HubSpot's stage {value!r} is mapped to none of ours")
        return ours
    if field == "value":
        try:
            return Decimal(value)
        except InvalidOperation:
            raise ValidationFailed(f"HubSpot's amount {value!r} is not a number") from None
    if field == "close_date":
        return value[:10]
    return value


# ─── the card's read ──────────────────────────────────────────────────────────────────────


def read_later(deps: FlowDeps, cur: Any, org_id: str, item_id: str, deal_id: str) -> bool:
    """In the transaction that queued a ``deal_update`` card: its HubSpot deal read after
    the commit, if the deal is linked and the org connected. False: nothing to read."""
    row = connection_rows.get(cur, PROVIDER)
    if row is None or row["status"] != "connected" or _linked_deal(cur, deal_id) is None:
        return False
    body = _read_task(org_id, item_id)
    enqueue(deps.transport, CRM_QUEUE, body, task_id=f"crm-read-{item_id}", delay_seconds=0)
    return True


def _read_task(org_id: str, item_id: str) -> Any:
    # lazy: the task model loads with the first read (pydantic models)
    from colony.contracts.crm_tasks import CrmCardRead, CrmTaskBody

    return CrmTaskBody(task=CrmCardRead(org_id=org_id, item_id=item_id))


def read_card(deps: FlowDeps, parts: CrmParts, org_id: str, item_id: str) -> dict[str, Any]:
    """The task: what HubSpot holds now of the fields a pending card changes, kept on it.
    A card decided meanwhile is left as it was decided."""
    with deps.db.transaction(org_id) as cur:
        item = approvals.lock(cur, item_id)
        if item is None:  # queued in a transaction whose commit is not visible yet
            raise PushNotYet(f"approval item {item_id!r} is not in this org (yet)")
        if item["kind"] != "deal_update" or item["status"] != "pending":
            return {"item_id": item_id, "status": "skipped"}
        update = parse_update(item["payload"])
        remote = _linked_deal(cur, update.deal_id)
    if remote is None:
        return {"item_id": item_id, "status": "unlinked"}
    names = [FIELDS[f] for f in update.changes.model_dump(exclude_none=True)]
    try:
        read = with_client(deps, parts, org_id, lambda crm: crm.deal_fields(remote, names))
    except ProviderUnavailable as limited:  # HubSpot's limit: read again after its wait
        wait = limit_wait(limited)
        body = _read_task(org_id, item_id)
        name = f"crm-read-{item_id}-limit-{int(deps.clock().timestamp())}"
        enqueue(deps.transport, CRM_QUEUE, body, task_id=name, delay_seconds=wait)
        return {"item_id": item_id, "status": "waiting", "waiting_seconds": wait}
    except Unavailable as why:
        return {"item_id": item_id, "status": why.status}
    except NotFound:
        return {"item_id": item_id, "status": "unlinked"}
    kept = {
        "provider": PROVIDER,
        "deal": remote,
        "read_at": deps.clock().isoformat(),
        "fields": {n: {"value": v.value, "set_at": v.set_at} for n, v in read.items()},
    }
    with deps.db.transaction(org_id) as cur:
        noted = approvals.note(cur, item_id, READ_KEY, kept)
    return {"item_id": item_id, "status": "read" if noted else "decided"}


# ─── the write ────────────────────────────────────────────────────────────────────────────


def write_later(deps: FlowDeps, cur: Any, org_id: str, item_id: str) -> str | None:
    """In the decision's transaction: the approved item's write-back pushed."""
    return queue(deps, cur, org_id, "deal_update", item_id, record=True)


def _changes(cur: Any, item: Mapping[str, Any], remote: str) -> list[tuple[str, FieldChange]]:
    """(our field, the change) for each field the approved item sets."""
    payload = item["edited_payload"] or item["payload"]
    if item["kind"] == CONFLICT_KIND:  # ours again, against HubSpot's value now
        return [
            (f["field"], FieldChange(f["crm_field"], f["ours_crm"], f["theirs"], f["changed_at"]))
            for f in payload["fields"]
        ]
    read = payload.get(READ_KEY) or {}
    seen = read.get("fields", {}) if read.get("deal") == remote else {}
    out = []
    for field, value in parse_update(payload).changes.model_dump(exclude_none=True).items():
        name = FIELDS[field]
        was = seen.get(name) or {}
        ours = to_crm(cur, field, value)
        out.append((field, FieldChange(name, ours, was.get("value"), was.get("set_at"))))
    return out


def write(deps: FlowDeps, parts: CrmParts, org_id: str, push: Mapping[str, Any]) -> dict[str, Any]:
    """One approved update written to its HubSpot deal, or why not (``pushes.run``)."""
    push_id = str(push["id"])
    with deps.db.transaction(org_id) as cur:
        item = approvals.lock(cur, str(push["source_id"]))
        if item is None:
            raise Unavailable("refused", "the approval item is gone")
        deal_id = str((item["edited_payload"] or item["payload"])["deal_id"])
        remote = _linked_deal(cur, deal_id)
        if remote is None:
            raise Unavailable("unlinked", "the deal is not linked to a HubSpot deal")
        try:
            changes = _changes(cur, item, remote)
        except Unmapped as error:
            raise Unavailable("unmapped", str(error)) from None
    try:
        fields = [change for _, change in changes]
        with_client(deps, parts, org_id, lambda crm: crm.update_deal(remote, fields))
    except CrmConflict as refused:
        item_id = _conflict_card(deps, org_id, push_id, deal_id, remote, changes, refused)
        return {"status": "conflict", "conflict_item_id": item_id}
    except NotFound:
        raise Unavailable("unlinked", "the linked HubSpot deal no longer exists") from None
    except ValidationFailed as error:
        raise Unavailable("refused", str(error)) from None
    with deps.db.transaction(org_id) as cur:
        repo.settle(cur, push_id, "written", None, remote_id=remote)
    return {"status": "written", "remote_id": remote}


def _conflict_card(
    deps: FlowDeps,
    org_id: str,
    push_id: str,
    deal_id: str,
    remote: str,
    changes: list[tuple[str, FieldChange]],
    refused: CrmConflict,
) -> str:
    """The conflict recorded and put to a person, once per push."""
    ours = {c.name: (field, c) for field, c in changes}
    with deps.db.transaction(org_id) as cur:
        push = repo.claim(cur, push_id)
        if push is not None and push["conflict_item_id"]:
            return str(push["conflict_item_id"])
        fields = [_side_by_side(cur, ours, conflict) for conflict in refused.conflicts]
        payload: dict[str, Any] = {"deal_id": deal_id, "crm_deal": remote, "push_id": push_id}
        payload |= {"keep": "ours", "fields": fields}
        item_id = approvals.add(cur, org_id, CONFLICT_KIND, "crm", payload, subject_id=deal_id)
        named = ", ".join(f["field"] for f in fields)
        if any(change.read_at for _, change in changes):
            outcome = f"HubSpot changed {named} since the card read it: a person chooses"
        else:  # approved before its read landed, or linked after the card was made
            outcome = f"HubSpot holds a {named} the card never read: a person chooses"
        repo.settle(cur, push_id, "conflict", outcome, conflict_item_id=item_id)
    return item_id


def _side_by_side(
    cur: Any, ours: Mapping[str, tuple[str, FieldChange]], conflict: FieldConflict
) -> dict[str, Any]:
    field, change = ours[conflict.name]
    try:
        theirs_ours = from_crm(cur, field, conflict.theirs)
    except ValidationFailed:
        theirs_ours = None  # shown as HubSpot has it; keeping theirs says what is missing
    return {
        "field": field,
        "crm_field": conflict.name,
        "ours": _plain(from_crm_or(cur, field, change.value)),
        "ours_crm": change.value,
        "read": conflict.read_value,
        "read_at": change.read_at,
        "theirs": conflict.theirs,
        "theirs_ours": _plain(theirs_ours),
        "changed_at": conflict.changed_at,
    }


def from_crm_or(cur: Any, field: str, value: str | None) -> Any:
    try:
        return from_crm(cur, field, value)
    except ValidationFailed:
        return value


def _plain(value: Any) -> Any:
    return None if value is None else str(value)


# ─── a person's choice ────────────────────────────────────────────────────────────────────


def apply_conflict(
    deps: FlowDeps, cur: Any, org_id: str, item_id: str, payload: Mapping[str, Any]
) -> None:
    """The ``crm_conflict`` applier (inside the decision's transaction): ``keep`` ours
    writes it again against HubSpot's value now; theirs makes our deal HubSpot's."""
    if payload.get("keep") == "theirs":
        values = {f["field"]: from_crm(cur, f["field"], f["theirs"]) for f in payload["fields"]}
        deal_id = str(payload["deal_id"])
        if not deal_store.lock(cur, deal_id):
            raise NotFound(f"deal {deal_id!r} does not exist in this org")
        deal_store.update(
            cur,
            deal_id,
            stage=values.get("stage"),
            value=values.get("value"),
            next_action=values.get("next_action"),
            close_date=_date(values.get("close_date")),
        )
        return
    queue(deps, cur, org_id, "deal_update", item_id, record=True)


def _date(value: Any) -> Any:
    return date.fromisoformat(value) if isinstance(value, str) else value
