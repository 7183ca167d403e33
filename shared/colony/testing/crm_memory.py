"""``MemoryCrm``, the ``CrmClient`` fake: a ``HubSpotWorld`` read and written directly, with
the rules the HubSpot stand-in applies over HTTP (page sizes, batch sizes, the search limits,
refused writes), so fast tests and the stand-in-backed adapter agree
(``tests/conformance/test_crm_client.py`` holds both to the port). ``MemoryLedger`` is the
``WriteLedger`` fake. Neither has rate limits: ``rate_limit()`` stays all None.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from colony.adapters.hubspot_records import (
    ENGAGEMENT_LINKS,
    conflict_error,
    decide,
    engagement_properties,
    probability,
)
from colony.errors import NotFound, ValidationFailed
from colony.ports import (
    CrmObjectType,
    CrmRecord,
    Engagement,
    EngagementRef,
    FieldChange,
    FieldVersion,
    Pipeline,
    RateLimit,
    RecordPage,
    SearchQuery,
    Stage,
    WriteLedger,
)
from colony.ports.crm import MAX_BATCH
from colony.testing.hubspot_search import SearchRefused, search
from colony.testing.hubspot_world import HubSpotWorld, Obj


class MemoryLedger:
    """Idempotency keys → CRM ids, in memory (first write wins)."""

    def __init__(self) -> None:
        self.kept: dict[str, tuple[str, str]] = {}
        self._lock = threading.Lock()

    def recorded(self, key: str) -> str | None:
        found = self.kept.get(key)
        return found[1] if found else None

    def record(self, key: str, kind: str, remote_id: str) -> str:
        with self._lock:
            return self.kept.setdefault(key, (kind, remote_id))[1]


class MemoryCrm:
    """The ``CrmClient`` fake over one portal's world."""

    def __init__(self, world: HubSpotWorld, ledger: WriteLedger | None = None) -> None:
        self.world = world
        self._ledger = ledger or MemoryLedger()

    def page(
        self,
        object_type: CrmObjectType,
        properties: Sequence[str],
        after: str | None = None,
        limit: int = 100,
    ) -> RecordPage:
        if after is not None and not after.isdigit():
            raise ValidationFailed("HubSpot: after is not a valid paging cursor")
        objects, nxt = self.world.page(object_type, after, max(1, min(limit, 100)))
        return RecordPage([self._record(object_type, o, properties) for o in objects], nxt)

    def read(
        self, object_type: CrmObjectType, ids: Sequence[str], properties: Sequence[str]
    ) -> list[CrmRecord]:
        if len(ids) > MAX_BATCH:
            raise ValidationFailed(f"HubSpot: a batch takes 1 to {MAX_BATCH} inputs")
        found = [self.world.get(object_type, i) for i in ids]
        return [self._record(object_type, o, properties) for o in found if o is not None]

    def search(self, object_type: CrmObjectType, query: SearchQuery) -> RecordPage:
        body: dict[str, Any] = {
            "filterGroups": [
                {
                    "filters": [
                        {
                            "propertyName": f.property,
                            "operator": f.operator,
                            "value": f.value,
                            "values": list(f.values),
                        }
                        for f in group
                    ]
                }
                for group in query.groups
            ],
            "limit": max(1, min(query.limit, 200)),
            "after": query.after or "0",
        }
        if query.sort:
            direction = "DESCENDING" if query.descending else "ASCENDING"
            body["sorts"] = [{"propertyName": query.sort, "direction": direction}]
        try:
            objects, total, after = search(self.world, object_type, body)
        except SearchRefused as refused:
            raise ValidationFailed(f"HubSpot: {refused}") from None
        records = [self._record(object_type, o, query.properties) for o in objects]
        return RecordPage(records, after, total)

    def associations(
        self, from_type: CrmObjectType, ids: Sequence[str], to_type: CrmObjectType
    ) -> dict[str, tuple[str, ...]]:
        if len(ids) > MAX_BATCH:
            raise ValidationFailed(f"HubSpot: a batch takes 1 to {MAX_BATCH} inputs")
        found = {}
        for object_id in ids:
            linked = self.world.linked(from_type, object_id, to_type)
            if linked and self.world.get(from_type, object_id) is not None:
                found[object_id] = tuple(sorted(linked, key=int))
        return found

    def pipelines(self) -> list[Pipeline]:
        return [
            Pipeline(
                p["id"],
                p["label"],
                tuple(
                    Stage(
                        s["id"],
                        s["label"],
                        int(s["displayOrder"]),
                        s["metadata"].get("isClosed") == "true",
                        probability(s["metadata"].get("probability")),
                    )
                    for s in sorted(p["stages"], key=lambda s: s["displayOrder"])
                ),
            )
            for p in sorted(self.world.pipelines, key=lambda p: (p["displayOrder"], p["id"]))
        ]

    def deal_fields(self, deal_id: str, names: Sequence[str]) -> dict[str, FieldVersion]:
        deal = self._deal(deal_id)
        return {
            n: FieldVersion(v[0].value, v[0].timestamp)
            if (v := deal.history.get(n))
            else FieldVersion(None, None)
            for n in names
        }

    def _deal(self, deal_id: str) -> Obj:
        deal = self.world.get("deals", deal_id)
        if deal is None:
            raise NotFound("HubSpot has no such record")
        return deal

    def update_deal(self, deal_id: str, changes: Sequence[FieldChange]) -> CrmRecord:
        deal = self._deal(deal_id)
        latest = {
            c.name: (versions[0].value, versions[0].timestamp)
            for c in changes
            if (versions := deal.history.get(c.name))
        }
        pending, conflicts = decide(changes, latest)
        if conflicts:
            raise conflict_error(deal_id, conflicts)
        if pending:
            refused = self.world.refusal("deals", pending)
            if refused:
                raise ValidationFailed(f"HubSpot: {refused}")
            self.world.update("deals", deal_id, pending, source="INTEGRATION")
        return self._record("deals", deal, [c.name for c in changes])

    def log_engagement(self, engagement: Engagement) -> EngagementRef:
        kept = self._ledger.recorded(engagement.key)
        if kept is not None:
            return EngagementRef(engagement.kind, kept, created=False)
        links = [
            (to_type, record_id)
            for to_type, ids in (
                ("contacts", engagement.contact_ids),
                ("companies", engagement.company_ids),
                ("deals", engagement.deal_ids),
            )
            for record_id in ids
        ]
        for to_type, record_id in links:
            assert (engagement.kind, to_type) in ENGAGEMENT_LINKS
            if self.world.get(to_type, record_id) is None:
                raise ValidationFailed(f"HubSpot: association to {record_id} is not valid")
        made = self.world.create(
            f"{engagement.kind}s",
            engagement_properties(engagement),
            source="INTEGRATION",
            links=links,
        )
        kept = self._ledger.record(engagement.key, engagement.kind, made.id)
        if kept != made.id:
            self.world.archive(f"{engagement.kind}s", made.id)
            return EngagementRef(engagement.kind, kept, created=False)
        return EngagementRef(engagement.kind, kept, created=True)

    def rate_limit(self) -> RateLimit:
        return RateLimit()

    def _record(self, object_type: CrmObjectType, obj: Obj, names: Sequence[str]) -> CrmRecord:
        body = self.world.render(obj, names)
        return CrmRecord(object_type, obj.id, body["properties"], obj.updated_at, obj.archived)
