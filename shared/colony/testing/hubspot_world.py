"""One HubSpot portal's CRM as the stand-ins hold it: contacts, companies, deals and
engagements (emails, notes, calls) with each property's history, associations, and the deal
pipelines. ``HubSpotServer`` serves it over HubSpot's v3/v4 wire format and ``MemoryCrm``
reads it directly (the ``CrmClient`` fake), so the two cannot disagree on the data.

Time is logical and deterministic: the world starts at ``EPOCH`` and every write moves it on
by one second, so a seeded world (``colony.testing.hubspot_seed``) is the same on every run,
and a test that changes a field "in HubSpot" after we read it gets a later timestamp.
Ids are HubSpot-like: numeric strings, counted per object type, in creation order.

``journal`` (off until set to a list) is what HubSpot's webhooks would say of each change of
a contact, company or deal, as its v3 event objects (``creation``, one ``propertyChange`` per
property, ``associationChange``, ``deletion``, ``merge``): ``colony.testing.hubspot_webhooks``
signs and delivers them in batches.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

EPOCH = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
OBJECT_TYPES = ("contacts", "companies", "deals", "emails", "notes", "calls")
SINGULAR = {"contacts": "contact", "companies": "company", "deals": "deal"}
SINGULAR |= {"emails": "email", "notes": "note", "calls": "call"}
PLURAL = {v: k for k, v in SINGULAR.items()}
FIRST_ID = {"contacts": 1001, "companies": 5001, "deals": 9001}
FIRST_ID |= {"emails": 70001, "notes": 80001, "calls": 90001}
MODIFIED = {"contacts": "lastmodifieddate"}  # every other type: hs_lastmodifieddate
DEFAULTS: dict[str, tuple[str, ...]] = {
    "contacts": ("createdate", "email", "firstname", "lastname", "lastmodifieddate"),
    "companies": ("createdate", "domain", "hs_lastmodifieddate", "name"),
    "deals": (
        "amount",
        "closedate",
        "createdate",
        "dealname",
        "dealstage",
        "hs_lastmodifieddate",
        "pipeline",
    ),
    "emails": ("hs_createdate", "hs_lastmodifieddate", "hs_timestamp"),
    "notes": ("hs_createdate", "hs_lastmodifieddate", "hs_timestamp"),
    "calls": ("hs_createdate", "hs_lastmodifieddate", "hs_timestamp"),
}
# HubSpot's own association type ids (category HUBSPOT_DEFINED), each way; the first of a
# pair with two is the unlabeled one, the second "Primary".
ASSOCIATION_TYPES: dict[tuple[str, str], tuple[int, ...]] = {
    ("contacts", "companies"): (279, 1),
    ("companies", "contacts"): (280, 2),
    ("deals", "contacts"): (3,),
    ("contacts", "deals"): (4,),
    ("deals", "companies"): (341, 5),
    ("companies", "deals"): (342, 6),
    ("emails", "contacts"): (198,),
    ("contacts", "emails"): (197,),
    ("emails", "companies"): (186,),
    ("companies", "emails"): (185,),
    ("emails", "deals"): (210,),
    ("deals", "emails"): (209,),
    ("notes", "contacts"): (202,),
    ("contacts", "notes"): (201,),
    ("notes", "companies"): (190,),
    ("companies", "notes"): (189,),
    ("notes", "deals"): (214,),
    ("deals", "notes"): (213,),
    ("calls", "contacts"): (194,),
    ("contacts", "calls"): (193,),
    ("calls", "companies"): (182,),
    ("companies", "calls"): (181,),
    ("calls", "deals"): (206,),
    ("deals", "calls"): (205,),
}


def iso(when: datetime) -> str:
    """HubSpot's timestamp form: UTC, milliseconds, ``Z``."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


@dataclass(slots=True)
class Version:
    value: str | None
    timestamp: str
    source: str


@dataclass(slots=True)
class Obj:
    """A record: its current properties and each property's versions, newest first."""

    type: str
    id: str
    created_at: str
    updated_at: str
    properties: dict[str, str | None] = field(default_factory=dict)
    history: dict[str, list[Version]] = field(default_factory=dict)
    archived: bool = False


class HubSpotWorld:
    """The data of one portal (``portal_id``)."""

    def __init__(self, portal_id: str = "62515") -> None:
        self.portal_id = portal_id
        self._now = EPOCH
        self._objects: dict[str, dict[str, Obj]] = {t: {} for t in OBJECT_TYPES}
        self._order: dict[str, list[int]] = {t: [] for t in OBJECT_TYPES}
        self._next = dict(FIRST_ID)
        # (from type, to type) → from id → to id → association type ids
        self._links: dict[tuple[str, str], dict[str, dict[str, set[int]]]] = {}
        self.pipelines: list[dict[str, Any]] = [default_pipeline()]
        self.journal: list[dict[str, Any]] | None = None
        self._event_ids = 0

    # -- time ----------------------------------------------------------------------------------

    def tick(self) -> str:
        """Move time on by one second; the new time."""
        self._now += timedelta(seconds=1)
        return iso(self._now)

    @property
    def now(self) -> str:
        return iso(self._now)

    # -- writes --------------------------------------------------------------------------------

    def create(
        self,
        object_type: str,
        properties: Mapping[str, str | None],
        *,
        source: str = "CRM_UI",
        links: Iterable[tuple[str, str]] = (),
    ) -> Obj:
        """A new record with ``properties``, associated with each ``(type, id)`` of ``links``."""
        when = self.tick()
        number = self._next[object_type]
        self._next[object_type] = number + 1
        obj = Obj(object_type, str(number), when, when)
        created = "hs_createdate" if object_type in ("emails", "notes", "calls") else "createdate"
        self._set(obj, {created: when, "hs_object_id": obj.id, **properties}, when, source)
        self._objects[object_type][obj.id] = obj
        self._order[object_type].append(number)
        for to_type, to_id in links:
            self.associate(object_type, obj.id, to_type, to_id)
        self._note(object_type, obj.id, "creation")
        return obj

    def update(
        self,
        object_type: str,
        object_id: str,
        properties: Mapping[str, str | None],
        *,
        source: str = "CRM_UI",
    ) -> Obj:
        """Change ``properties`` of a live record (``KeyError`` if there is none)."""
        obj = self.get(object_type, object_id)
        if obj is None:
            raise KeyError(object_id)
        before = dict(obj.properties)
        self._set(obj, properties, self.tick(), source)
        for name, value in properties.items():
            if before.get(name) != obj.properties.get(name) or name not in before:
                self._note(
                    object_type, object_id, "propertyChange", propertyName=name, propertyValue=value
                )
        return obj

    def archive(self, object_type: str, object_id: str) -> None:
        obj = self._objects[object_type][object_id]
        obj.archived = True
        obj.updated_at = self.tick()
        self._note(object_type, object_id, "deletion")

    def merge(self, object_type: str, primary_id: str, merged_id: str) -> Obj:
        """Merge ``merged_id`` into ``primary_id`` as HubSpot does: the primary keeps its id
        and its values (a property it lacks is taken from the other), takes the other's
        associations, and the other is gone (reads of it find nothing)."""
        primary, merged = self.get(object_type, primary_id), self.get(object_type, merged_id)
        if primary is None or merged is None:
            raise KeyError(merged_id if primary else primary_id)
        for (a_type, b_type), links in list(self._links.items()):
            if a_type == object_type and merged_id in links:
                for to_id in list(links[merged_id]):
                    self.associate(object_type, primary_id, b_type, to_id)
        taken = {
            k: v
            for k, v in merged.properties.items()
            if v is not None and primary.properties.get(k) is None and k in DEFAULTS[object_type]
        }
        merged.archived = True
        self._set(primary, {**taken, "hs_merged_object_ids": merged_id}, self.tick(), "CRM_UI")
        merged.updated_at = primary.updated_at
        self._note(object_type, primary_id, "merge", merged=(merged_id,))
        return primary

    def _note(
        self,
        object_type: str,
        object_id: str,
        change: str,
        *,
        merged: tuple[str, ...] = (),
        **extra: Any,
    ) -> None:
        """Journal one webhook event (contacts, companies and deals only)."""
        if self.journal is None or object_type not in ("contacts", "companies", "deals"):
            return
        self._event_ids += 1
        event: dict[str, Any] = {
            "eventId": self._event_ids,
            "subscriptionId": 4000 + OBJECT_TYPES.index(object_type),
            "portalId": int(self.portal_id),
            "appId": 1_000_001,
            "occurredAt": int(self._now.timestamp() * 1000),
            "subscriptionType": f"{SINGULAR[object_type]}.{change}",
            "attemptNumber": 0,
            "objectId": int(object_id),
            "changeSource": "CRM_UI",
            **extra,
        }
        if change == "merge":
            event |= {
                "primaryObjectId": int(object_id),
                "mergedObjectIds": [int(m) for m in merged],
                "newObjectId": int(object_id),
            }
        self.journal.append(event)

    def _set(self, obj: Obj, properties: Mapping[str, str | None], when: str, source: str) -> None:
        for name, value in properties.items():
            value = None if value is None else str(value)
            if obj.properties.get(name) == value and name in obj.properties:
                continue  # HubSpot keeps no version for a value that did not change
            obj.properties[name] = value
            obj.history.setdefault(name, []).insert(0, Version(value, when, source))
        modified = MODIFIED.get(obj.type, "hs_lastmodifieddate")
        obj.properties[modified] = when
        obj.history.setdefault(modified, []).insert(0, Version(when, when, source))
        obj.updated_at = when

    def associate(self, from_type: str, from_id: str, to_type: str, to_id: str) -> None:
        """Associate both ways with HubSpot's default (unlabeled) types, and as "Primary"
        where the pair has one and the record has no primary yet."""
        for a_type, a_id, b_type, b_id in (
            (from_type, from_id, to_type, to_id),
            (to_type, to_id, from_type, from_id),
        ):
            types = ASSOCIATION_TYPES.get((a_type, b_type))
            if types is None:
                raise ValueError(f"HubSpot does not associate {a_type} with {b_type}")
            links = self._links.setdefault((a_type, b_type), {}).setdefault(a_id, {})
            kinds = links.setdefault(b_id, set())
            kinds.add(types[0])
            if len(types) > 1 and not any(types[1] in k for k in links.values()):
                kinds.add(types[1])

    # -- reads ---------------------------------------------------------------------------------

    def get(self, object_type: str, object_id: str) -> Obj | None:
        obj = self._objects[object_type].get(object_id)
        return obj if obj is not None and not obj.archived else None

    def count(self, object_type: str) -> int:
        return sum(1 for o in self._objects[object_type].values() if not o.archived)

    def live(self, object_type: str) -> Iterator[Obj]:
        """Live records in id order."""
        objects = self._objects[object_type]
        for number in self._order[object_type]:
            obj = objects[str(number)]
            if not obj.archived:
                yield obj

    def page(self, object_type: str, after: str | None, limit: int) -> tuple[list[Obj], str | None]:
        """Live records from id ``after`` on (HubSpot's cursor here is the next id), and the
        next cursor. ``ValueError`` for a cursor that is not one."""
        order = self._order[object_type]
        start = bisect.bisect_left(order, int(after)) if after else 0
        objects = self._objects[object_type]
        found: list[Obj] = []
        index = start
        while index < len(order) and len(found) < limit:
            obj = objects[str(order[index])]
            index += 1
            if not obj.archived:
                found.append(obj)
        while index < len(order) and objects[str(order[index])].archived:
            index += 1
        return found, (str(order[index]) if index < len(order) else None)

    def linked(self, from_type: str, from_id: str, to_type: str) -> dict[str, set[int]]:
        """The live records of ``to_type`` a record is associated with → their type ids."""
        links = self._links.get((from_type, to_type), {}).get(from_id, {})
        return {i: set(k) for i, k in links.items() if self.get(to_type, i) is not None}

    def refusal(self, object_type: str, properties: Mapping[str, Any]) -> str | None:
        """HubSpot's refusal of a write it cannot take (a read-only property, a deal stage
        no pipeline has); None: it takes it."""
        for name in ("hs_object_id", "createdate", "hs_lastmodifieddate", "lastmodifieddate"):
            if name in properties:
                return f"Property {name!r} is read-only"
        stage = properties.get("dealstage")
        if object_type == "deals" and stage is not None and self.pipeline_stage(str(stage)) is None:
            return f"{stage!r} was not one of the allowed options for dealstage"
        return None

    def pipeline_stage(self, stage_id: str) -> dict[str, Any] | None:
        for pipeline in self.pipelines:
            for stage in pipeline["stages"]:
                if stage["id"] == stage_id:
                    return dict(stage)
        return None

    def render(
        self, obj: Obj, properties: Iterable[str] = (), with_history: Iterable[str] = ()
    ) -> dict[str, Any]:
        """``obj`` as HubSpot answers it: the default properties and those asked for (an
        asked property without a value is null), with history for ``with_history``."""
        names = {*DEFAULTS[obj.type], "hs_object_id", *properties}
        body: dict[str, Any] = {
            "id": obj.id,
            "properties": {n: obj.properties.get(n) for n in sorted(names)},
            "createdAt": obj.created_at,
            "updatedAt": obj.updated_at,
            "archived": obj.archived,
        }
        history = list(with_history)
        if history:
            body["propertiesWithHistory"] = {
                n: [
                    {"value": v.value, "timestamp": v.timestamp, "sourceType": v.source}
                    for v in obj.history.get(n, [])
                ]
                for n in history
            }
        return body


def default_pipeline() -> dict[str, Any]:
    """HubSpot's default "Sales Pipeline" with its seven stages."""
    stages = [
        ("appointmentscheduled", "Appointment Scheduled", "0.2", False),
        ("qualifiedtobuy", "Qualified To Buy", "0.4", False),
        ("presentationscheduled", "Presentation Scheduled", "0.6", False),
        ("decisionmakerboughtin", "Decision Maker Bought-In", "0.8", False),
        ("contractsent", "Contract Sent", "0.9", False),
        ("closedwon", "Closed Won", "1.0", True),
        ("closedlost", "Closed Lost", "0.0", True),
    ]
    return pipeline("default", "Sales Pipeline", stages)


def pipeline(
    pipeline_id: str, label: str, stages: Iterable[tuple[str, str, str, bool]]
) -> dict[str, Any]:
    """A pipeline as HubSpot answers it: ``stages`` as (id, label, probability, closed)."""
    when = iso(EPOCH)
    return {
        "id": pipeline_id,
        "label": label,
        "displayOrder": 0,
        "archived": False,
        "createdAt": when,
        "updatedAt": when,
        "stages": [
            {
                "id": stage_id,
                "label": stage_label,
                "displayOrder": order,
                "metadata": {"isClosed": str(closed).lower(), "probability": probability},
                "archived": False,
                "createdAt": when,
                "updatedAt": when,
                "writePermissions": "CRM_PERMISSIONS_ENFORCEMENT",
            }
            for order, (stage_id, stage_label, probability, closed) in enumerate(stages)
        ],
    }
