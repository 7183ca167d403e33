"""The ``CrmClient`` port's conformance suite (issue 36): the in-memory fake and the HubSpot
adapter alike.

- ``memory``: ``colony.testing.crm_memory.MemoryCrm``, reading a ``HubSpotWorld`` directly;
- ``http``: ``colony.adapters.hubspot.HubSpotCrm`` — the official ``hubspot-api-client`` —
  against ``colony.testing.hubspot_server.HubSpotServer`` on 127.0.0.1 (HubSpot's v3/v4 wire
  format, its OAuth tokens and limits), with a token the stand-in issued. HubSpot itself needs
  an app, a portal and the network; the stand-in is its stand-in.

Both read the same seeded world (``hubspot_seed.seeded_world``), and a test that changes the
CRM "from HubSpot's side" writes to that world, as a person in HubSpot would.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

import pytest

from colony.adapters.hubspot import HubSpotCrm, sdk_client
from colony.errors import CrmConflict, NotFound, ValidationFailed
from colony.ports import (
    CrmClient,
    Engagement,
    FieldChange,
    FieldVersion,
    RateLimit,
    SearchFilter,
    SearchQuery,
)
from colony.testing.crm_memory import MemoryCrm, MemoryLedger
from colony.testing.hubspot_seed import UNMAPPED_STAGE, seeded_world
from colony.testing.hubspot_server import HubSpotServer
from colony.testing.hubspot_world import HubSpotWorld
from tests.conformance.exercise import exercised


@dataclass
class Crm:
    client: CrmClient
    world: HubSpotWorld
    ledger: MemoryLedger


@pytest.fixture(params=["memory", "http"])
def crm(request: pytest.FixtureRequest) -> Iterator[Crm]:
    world = seeded_world(7, companies=5, contacts=40, deals=20)
    ledger = MemoryLedger()
    if request.param == "memory":
        yield Crm(MemoryCrm(world, ledger), world, ledger)
        return
    with HubSpotServer(world) as server:
        token = server.accounts.issue(world.portal_id)["access_token"]
        client = sdk_client(server.url, token)
        yield Crm(HubSpotCrm(client, ledger, sleep=server.clock.sleep), world, ledger)


def _deal_version(world: HubSpotWorld, deal_id: str, name: str) -> tuple[str | None, str]:
    deal = world.get("deals", deal_id)
    assert deal is not None
    latest = deal.history[name][0]
    return latest.value, latest.timestamp


def test_it_is_a_crm_client(crm: Crm) -> None:
    """Every method of the port, once, on the seeded world."""
    with exercised(CrmClient, crm.client) as client:
        assert client.rate_limit() == RateLimit()  # nothing said before the first answer
        assert [r.id for r in client.page("companies", ["name"], limit=2).records] == [
            "5001",
            "5002",
        ]
        assert [r.id for r in client.read("contacts", ["1002", "1001"], ["email"])] == [
            "1002",
            "1001",
        ]
        found = client.search("deals", SearchQuery(groups=((_eq("pipeline", "partnerships"),),)))
        assert found.total == 1 and found.records[0].properties["dealstage"] == UNMAPPED_STAGE
        assert client.associations("deals", ["9001"], "contacts") == {"9001": ("1001",)}
        assert [p.id for p in client.pipelines()] == ["default", "partnerships"]
        read = client.deal_fields("9001", ["dealstage"])["dealstage"]
        assert (read.value, read.set_at) == _deal_version(crm.world, "9001", "dealstage")
        change = FieldChange("dealstage", "closedwon", read.value, read.set_at)
        assert client.update_deal("9001", [change]).properties["dealstage"] == "closedwon"
        note = Engagement("note", "k-1", "2026-02-01T10:00:00.000Z", "Called; keen.")
        assert client.log_engagement(note).created is True
        assert isinstance(client.rate_limit(), RateLimit)


def _eq(name: str, value: str) -> SearchFilter:
    return SearchFilter(name, "EQ", value)


def test_rate_limits_are_unknown_before_the_first_answer(crm: Crm) -> None:
    assert crm.client.rate_limit() == RateLimit()


def test_paging_visits_every_live_record_once_in_id_order(crm: Crm) -> None:
    crm.world.archive("contacts", "1003")
    seen: list[str] = []
    after = None
    while True:
        page = crm.client.page("contacts", ["email", "jobtitle"], after=after, limit=7)
        seen += [r.id for r in page.records]
        assert all("jobtitle" in r.properties for r in page.records)
        if page.after is None:
            break
        after = page.after
    assert seen == [str(n) for n in range(1001, 1041) if n != 1003]


def test_a_contact_without_email_reads_as_none(crm: Crm) -> None:
    (record,) = crm.client.read("contacts", ["1031"], ["email"])  # the 31st has none
    assert record.properties["email"] is None and record.updated_at.endswith("Z")


def test_a_batch_read_leaves_out_what_does_not_exist_and_is_bounded(crm: Crm) -> None:
    crm.world.archive("deals", "9002")
    found = crm.client.read("deals", ["9003", "9002", "9999", "9001"], ["dealname"])
    assert [r.id for r in found] == ["9003", "9001"]
    with pytest.raises(ValidationFailed):
        crm.client.read("deals", [str(9000 + n) for n in range(101)], ["dealname"])


def test_search_ors_groups_ands_filters_sorts_and_pages(crm: Crm) -> None:
    won_or_lost = (
        (_eq("pipeline", "default"), SearchFilter("dealstage", "IN", values=("closedwon",))),
        (_eq("pipeline", "default"), SearchFilter("dealstage", "IN", values=("closedlost",))),
    )
    expected = sorted(
        (
            o
            for o in crm.world.live("deals")
            if o.properties["dealstage"] in ("closedwon", "closedlost")
        ),
        key=lambda o: -float(o.properties["amount"] or 0),
    )
    query = SearchQuery(
        groups=won_or_lost, properties=("amount",), sort="amount", descending=True, limit=2
    )
    ids: list[str] = []
    after = None
    while True:
        page = crm.client.search("deals", replace(query, after=after))
        assert page.total == len(expected)
        ids += [r.id for r in page.records]
        if page.after is None:
            break
        after = page.after
    assert ids == [o.id for o in expected] and len(ids) >= 2


def test_search_refuses_to_page_past_ten_thousand_results(crm: Crm) -> None:
    with pytest.raises(ValidationFailed, match="10000"):
        crm.client.search("contacts", SearchQuery(after="10000"))
    too_many = tuple((_eq("firstname", "Ada"),) for _ in range(6))
    with pytest.raises(ValidationFailed):
        crm.client.search("contacts", SearchQuery(groups=too_many))


def test_associations_come_in_batches_with_the_unassociated_left_out(crm: Crm) -> None:
    lonely = crm.world.create("deals", {"dealname": "No one", "dealstage": "qualifiedtobuy"})
    got = crm.client.associations("deals", ["9001", lonely.id, "9002"], "companies")
    assert got == {"9001": ("5001",), "9002": ("5002",)}
    people = crm.client.associations("companies", ["5001"], "contacts")["5001"]
    assert people == tuple(str(1001 + n) for n in range(0, 40, 5))


def test_pipelines_list_stages_in_order_with_closed_flags(crm: Crm) -> None:
    default = crm.client.pipelines()[0]
    assert [s.id for s in default.stages][:2] == ["appointmentscheduled", "qualifiedtobuy"]
    assert {s.id for s in default.stages if s.closed} == {"closedwon", "closedlost"}
    assert default.stages[0].probability == pytest.approx(0.2)


def test_a_deal_update_applies_when_nothing_changed_since_it_was_read(crm: Crm) -> None:
    stage, at = _deal_version(crm.world, "9004", "dealstage")
    amount, amount_at = _deal_version(crm.world, "9004", "amount")
    changes = [
        FieldChange("dealstage", "contractsent", stage, at),
        FieldChange("amount", "125000.00", amount, amount_at),
        FieldChange("description", "Approved in Colony", None, None),  # never had a value
    ]
    updated = crm.client.update_deal("9004", changes)
    assert updated.properties["dealstage"] == "contractsent"
    deal = crm.world.get("deals", "9004")
    assert deal is not None and deal.properties["amount"] == "125000.00"
    assert deal.properties["description"] == "Approved in Colony"
    # the same update retried finds its own write: no conflict, nothing written again
    versions = len(deal.history["dealstage"])
    crm.client.update_deal("9004", changes)
    assert len(deal.history["dealstage"]) == versions


def test_a_deal_read_field_by_field_builds_an_update_that_applies(crm: Crm) -> None:
    """What a card keeps as "what we read": each field's value and when it was set."""
    read = crm.client.deal_fields("9003", ["dealstage", "amount", "description"])
    stage, at = _deal_version(crm.world, "9003", "dealstage")
    assert read["dealstage"] == FieldVersion(stage, at)
    assert read["description"] == FieldVersion(None, None)  # never had a value
    changes = [
        FieldChange(n, v, read[n].value, read[n].set_at)
        for n, v in (("amount", "4200.00"), ("description", "Colony"))
    ]
    assert crm.client.update_deal("9003", changes).properties["amount"] == "4200.00"
    after = crm.client.deal_fields("9003", ["amount"])["amount"]
    assert after.value == "4200.00" and str(after.set_at) > str(read["amount"].set_at)
    with pytest.raises(NotFound):
        crm.client.deal_fields("9999", ["amount"])


def test_a_field_changed_in_hubspot_since_it_was_read_refuses_the_whole_update(crm: Crm) -> None:
    stage, at = _deal_version(crm.world, "9005", "dealstage")
    amount, amount_at = _deal_version(crm.world, "9005", "amount")
    crm.world.update("deals", "9005", {"amount": "1.00"})  # a person in HubSpot, after our read
    changes = [
        FieldChange("dealstage", "closedwon", stage, at),
        FieldChange("amount", "99000.00", amount, amount_at),
    ]
    with pytest.raises(CrmConflict) as refused:
        crm.client.update_deal("9005", changes)
    (conflict,) = refused.value.conflicts
    assert (conflict.name, conflict.ours, conflict.read_value, conflict.theirs) == (
        "amount",
        "99000.00",
        amount,
        "1.00",
    )
    assert conflict.changed_at is not None and conflict.changed_at > str(amount_at)
    assert crm.world.get("deals", "9005").properties["dealstage"] == stage  # type: ignore[union-attr]


def test_a_value_set_back_to_what_we_read_is_still_a_conflict(crm: Crm) -> None:
    """Changed and changed back: the version we read is gone, so a person decides."""
    stage, at = _deal_version(crm.world, "9006", "dealstage")
    other = "closedlost" if stage != "closedlost" else "qualifiedtobuy"
    crm.world.update("deals", "9006", {"dealstage": other})
    crm.world.update("deals", "9006", {"dealstage": stage})
    with pytest.raises(CrmConflict):
        crm.client.update_deal("9006", [FieldChange("dealstage", "contractsent", stage, at)])


def test_an_unknown_deal_or_stage_is_refused(crm: Crm) -> None:
    with pytest.raises(NotFound):
        crm.client.update_deal("9999", [FieldChange("dealname", "x", None, None)])
    stage, at = _deal_version(crm.world, "9007", "dealstage")
    with pytest.raises(ValidationFailed):
        crm.client.update_deal("9007", [FieldChange("dealstage", "no_such_stage", stage, at)])


def test_an_engagement_is_logged_once_per_key_on_its_records(crm: Crm) -> None:
    email = Engagement(
        "email",
        "outbox:m-1",
        "2026-02-02T08:00:00Z",
        "Hi Fay, following up on the rollout.",
        subject="Rollout",
        contact_ids=("1001",),
        deal_ids=("9001",),
    )
    first = crm.client.log_engagement(email)
    again = crm.client.log_engagement(email)  # a retried task
    assert first.created and not again.created and again.id == first.id
    assert crm.world.count("emails") == 1
    logged = crm.world.get("emails", first.id)
    assert logged is not None and logged.properties["hs_email_subject"] == "Rollout"
    assert logged.properties["hs_timestamp"] == "2026-02-02T08:00:00.000Z"
    assert set(crm.world.linked("contacts", "1001", "emails")) == {first.id}
    assert set(crm.world.linked("deals", "9001", "emails")) == {first.id}
    call = Engagement("call", "call:r-1", "2026-02-03T08:00:00Z", "Summary", subject="Intro call")
    made = crm.client.log_engagement(call)
    assert crm.world.get("calls", made.id).properties["hs_call_title"] == "Intro call"  # type: ignore[union-attr]


def test_a_concurrent_write_of_the_same_key_keeps_one_engagement(crm: Crm) -> None:
    """Another worker kept its engagement under the key between our look-up and our write:
    ours is archived and theirs returned."""
    theirs = crm.world.create("notes", {"hs_note_body": "theirs"})
    crm.ledger.recorded = lambda key: None  # type: ignore[method-assign]  # the look-up ran first
    crm.ledger.kept["dup"] = ("note", theirs.id)
    ref = crm.client.log_engagement(Engagement("note", "dup", "2026-02-04T08:00:00Z", "ours"))
    assert (ref.id, ref.created) == (theirs.id, False)
    assert [n.id for n in crm.world.live("notes")] == [theirs.id]


def test_an_engagement_on_a_record_that_does_not_exist_is_refused(crm: Crm) -> None:
    with pytest.raises(ValidationFailed):
        crm.client.log_engagement(
            Engagement("note", "k-x", "2026-02-04T08:00:00Z", "x", contact_ids=("999999",))
        )
    assert crm.world.count("notes") == 0 and crm.ledger.recorded("k-x") is None
