"""Which records of a batch are new rows and which update one that exists (in the database,
or earlier in the same file): the dedupe rules of imports, without I/O.

Prospects match by external id when the record has one, then by email, then by (name,
company domain), all but the external id in lower case. Deals match by external id, then
by name. Several records naming one row merge into one write (later cells win; an empty
cell keeps the value before it), so a batch never writes a row twice.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from colony.imports.rows import Deal, Prospect


@dataclass
class Plan:
    """A batch's writes: rows to insert, rows to update (by id), and how many records each
    became (``updated`` counts records merged into a row that already existed or was
    created earlier in the file)."""

    inserts: dict[str, dict[str, Any]] = field(default_factory=dict)
    updates: dict[str, dict[str, Any]] = field(default_factory=dict)
    created: int = 0
    updated: int = 0


def _values(record: Prospect | Deal) -> dict[str, Any]:
    # not dataclasses.asdict: it deep-copies every value, a third of a batch's planning
    return {name: getattr(record, name) for name in _FIELDS[type(record)]}


_FIELDS = {kind: tuple(f.name for f in fields(kind)) for kind in (Prospect, Deal)}


def _merge(into: dict[str, Any], values: Mapping[str, Any]) -> None:
    for key, value in values.items():
        if value is not None and key != "id":
            into[key] = value


class _Keys:
    def __init__(self, kinds: Sequence[str]) -> None:
        self.maps: dict[str, dict[Any, str]] = {k: {} for k in kinds}

    def find(self, keys: Mapping[str, Any]) -> str | None:
        for kind, index in self.maps.items():  # in priority order
            key = keys.get(kind)
            if key is not None and key in index:
                return index[key]
        return None

    def add(self, row_id: str, keys: Mapping[str, Any]) -> None:
        for kind, index in self.maps.items():
            key = keys.get(kind)
            if key is not None:
                index.setdefault(key, row_id)


def _plan(records: Iterable[tuple[dict[str, Any], dict[str, Any]]], keys: _Keys) -> Plan:
    """Every id ``keys`` finds is an existing row's or one this plan inserts."""
    plan = Plan()
    for values, record_keys in records:
        row_id = keys.find(record_keys)
        if row_id is None:
            row_id = str(uuid.uuid4())
            plan.inserts[row_id] = {**values, "id": row_id}
            plan.created += 1
        else:
            target = plan.inserts.get(row_id)
            if target is None:
                target = plan.updates.setdefault(row_id, {**values, "id": row_id})
            _merge(target, values)
            plan.updated += 1
        keys.add(row_id, record_keys)
    return plan


def prospect_keys(p: Prospect) -> dict[str, Any]:
    name_domain = (p.name.lower(), p.company_domain.lower()) if p.company_domain else None
    return {
        "external_id": p.external_id,
        "email": p.email.lower() if p.email else None,
        "name_domain": name_domain,
    }


def plan_prospects(batch: Sequence[Prospect], existing: Iterable[Mapping[str, Any]]) -> Plan:
    keys = _Keys(("external_id", "email", "name_domain"))
    for row in existing:
        domain = row.get("domain")
        keys.add(
            str(row["id"]),
            {
                "external_id": row.get("external_id"),
                "email": row.get("email"),
                "name_domain": (row["name"], domain) if domain else None,
            },
        )
    return _plan(((_values(p), prospect_keys(p)) for p in batch), keys)


def deal_keys(d: Deal) -> dict[str, Any]:
    return {"external_id": d.external_id, "name": d.name.lower()}


def plan_deals(
    batch: Sequence[Deal], existing: Iterable[Mapping[str, Any]], contacts: Mapping[str, str]
) -> Plan:
    """``contacts``: lower-cased email → contact id, to link a deal to its contact."""
    keys = _Keys(("external_id", "name"))
    for row in existing:
        keys.add(str(row["id"]), {"external_id": row.get("external_id"), "name": row["name"]})
    records = []
    for d in batch:
        values = _values(d)
        email = values.pop("contact_email")
        values["contact_id"] = contacts.get(email.lower()) if email else None
        records.append((values, deal_keys(d)))
    return _plan(records, keys)
