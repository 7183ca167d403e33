"""HubSpot's per-portal limit kept by us across instances (issue 36 item 4): two
``SharedLimit`` objects stand for two instances on the same real PostgreSQL; a request over
the window or the day is not made and says how long to wait; each portal (one org's) has its
own count, so one org's backfill never spends another's. Every HTTP request the adapter makes
is counted (through the official client, against the HubSpot stand-in): write-back's read and
PATCH, an engagement's create, and the archive of a concurrent duplicate."""

from __future__ import annotations

import pytest

from colony.adapters.hubspot import HubSpotCrm, sdk_client
from colony.errors import ProviderUnavailable
from colony.flows.crm.limits import SharedLimit
from colony.ports import Engagement, FieldChange
from colony.testing.crm_memory import MemoryLedger
from colony.testing.hubspot_seed import seeded_world
from colony.testing.hubspot_server import HubSpotServer
from tests.conftest import PgDB


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0 + 0.25  # epoch seconds, a quarter into a second

    def __call__(self) -> float:
        return self.now


def test_instances_share_one_portals_window_and_day(testdb: PgDB) -> None:
    db, clock = testdb.app(), Clock()
    one = SharedLimit(db, "101", burst=5, window=10, daily=8, clock=clock)
    two = SharedLimit(db, "101", burst=5, window=10, daily=8, clock=clock)
    other_org = SharedLimit(db, "202", burst=5, window=10, daily=8, clock=clock)
    for limit in (one, one, two, one, two):
        limit.take()
    with pytest.raises(ProviderUnavailable) as full:
        two.take()
    # the oldest second leaves the count at +11: a rolling 10 s that began a quarter into it
    # still held those calls at +10
    assert full.value.retry_after == pytest.approx(10.75)
    for _ in range(5):
        other_org.take()  # another portal's count is its own
    clock.now += 10.0
    with pytest.raises(ProviderUnavailable):
        one.take()  # 9.75 s after the calls: HubSpot's rolling window still holds them
    clock.now += 0.75
    one.take()  # a slot freed
    clock.now += 11
    one.take()
    one.take()
    with pytest.raises(ProviderUnavailable) as day:  # 8 a day for this portal
        two.take()
    assert day.value.retry_after is not None and day.value.retry_after > 3600
    assert (one.taken, two.taken, other_org.taken) == (6, 2, 5)


class KeptByAnother(MemoryLedger):
    """A ledger where a concurrent worker kept its own engagement under the key first."""

    def record(self, key: str, kind: str, remote_id: str) -> str:
        return super().record(key, kind, "70999")


def test_every_http_request_of_the_adapter_takes_a_slot_and_none_over_is_made(
    testdb: PgDB,
) -> None:
    world = seeded_world(1, portal_id="101", contacts=3, deals=2)
    clock = Clock()
    with HubSpotServer(world) as hubspot:
        token = hubspot.accounts.issue("101")["access_token"]
        limit = SharedLimit(testdb.app(), "101", burst=6, clock=clock)
        client = sdk_client(hubspot.url, token)
        crm = HubSpotCrm(client, KeptByAnother(), attempts=1, budget=limit)

        def made() -> int:  # CRM requests that reached HubSpot
            return sum(not str(r.route).startswith("oauth") for r in hubspot.requests)

        assert crm.page("contacts", ["email"]).records and limit.taken == 1
        assert crm.associations("contacts", [], "companies") == {}  # no request, no slot
        read = crm.deal_fields("9001", ["amount"])
        assert limit.taken == 2
        change = FieldChange("amount", "777.00", read["amount"].value, read["amount"].set_at)
        crm.update_deal("9001", [change])  # the read with history and the PATCH: two
        assert limit.taken == 4 and made() == 4
        ref = crm.log_engagement(_note("note:1"))  # a create, then our duplicate archived: two
        assert (ref.id, ref.created) == ("70999", False)
        assert limit.taken == 6 and made() == 6
        assert [r.route for r in hubspot.requests][-2:] == ["objects.create", "objects.archive"]
        # the window is full: nothing more is made, a write-back least of all half of one
        with pytest.raises(ProviderUnavailable, match="shared by every instance"):
            crm.update_deal("9001", [FieldChange("amount", "1.00", "777.00", None)])
        with pytest.raises(ProviderUnavailable):
            crm.deal_fields("9001", ["dealstage"])
        with pytest.raises(ProviderUnavailable):
            crm.log_engagement(_note("note:2"))
        assert made() == 6 and limit.taken == 6
        clock.now += 11  # the window moved on: the same write is made whole
        now = crm.deal_fields("9001", ["amount"])["amount"]
        crm.update_deal("9001", [FieldChange("amount", "1.00", now.value, now.set_at)])
        deal = world.get("deals", "9001")
        assert made() == 9 and deal is not None and deal.properties["amount"] == "1.00"


def _note(key: str) -> Engagement:
    return Engagement(kind="note", key=key, timestamp="2026-01-05T09:00:00Z", body="a note")
