"""HubSpot's per-portal limit kept by us across instances (issue 36 item 4): two
``SharedLimit`` objects stand for two instances on the same real PostgreSQL; a call over the
window or the day is not made and says how long to wait; each portal (one org's) has its own
count, so one org's backfill never spends another's."""

from __future__ import annotations

import pytest

from colony.errors import ProviderUnavailable
from colony.flows.crm.limits import LimitedCrm, SharedLimit
from colony.testing.crm_memory import MemoryCrm
from colony.testing.hubspot_seed import seeded_world
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
    assert full.value.retry_after == pytest.approx(9.75)  # the oldest second leaves at +10
    for _ in range(5):
        other_org.take()  # another portal's count is its own
    clock.now += 9.75
    one.take()  # a slot freed
    clock.now += 10
    one.take()
    one.take()
    with pytest.raises(ProviderUnavailable) as day:  # 8 a day for this portal
        two.take()
    assert day.value.retry_after is not None and day.value.retry_after > 3600
    assert (one.taken, two.taken, other_org.taken) == (6, 2, 5)


def test_a_call_over_the_limit_is_not_made(testdb: PgDB) -> None:
    clock = Clock()
    world = seeded_world(1, contacts=3)
    client = LimitedCrm(MemoryCrm(world), SharedLimit(testdb.app(), "101", burst=2, clock=clock))
    assert client.page("contacts", ["email"]).records
    assert client.associations("contacts", [], "companies") == {}  # no call, no slot
    assert client.read("contacts", ["1001"], ["email"])[0].id == "1001"
    with pytest.raises(ProviderUnavailable, match="shared by every instance"):
        client.pipelines()
    world.journal = []
    with pytest.raises(ProviderUnavailable):
        client.update_deal("9001", [])
    with pytest.raises(ProviderUnavailable):  # write-back's read of a deal's fields too
        client.deal_fields("9001", ["dealstage"])
    assert world.journal == []  # nothing reached the CRM
