"""Approved deal updates written back to HubSpot (issue 36 item 3), from outside: a person
decides through the real approval function, the CRM queue's tasks run in the real
crm function, the HubSpot stand-in is read and written through the official
client with the org's own OAuth token, and every outcome is a row of the real PostgreSQL.

Nothing reaches HubSpot inside the decision (the world is unchanged until the task runs); a
change made in HubSpot after the card read it is refused and put to a person, who keeps
either side; a paused connection waits and resumes on reconnect; an unlinked deal or an org
without HubSpot is recorded, not written; a retried task writes once; and another org's
person, task or deal never reaches this org's portal.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from colony.flows.approvals import approval_cards
from colony.flows.pipeline import deals
from colony.store.approvals import approvals
from tests.crm_world import ALPHA, BETA, CrmWorld, crm_world  # noqa: F401  (the fixture)

pytestmark = pytest.mark.covers("fn:crm", "fn:approval")


@pytest.fixture
def world(crm_world: CrmWorld) -> CrmWorld:  # noqa: F811  (the fixture imported above)
    return crm_world


def _hubspot_deal(world: CrmWorld, org: str, deal_id: str) -> dict[str, Any]:
    deal = world.portals[org].get("deals", deal_id)
    assert deal is not None
    return dict(deal.properties)


def _updates(world: CrmWorld) -> int:
    return [r.route for r in world.hubspot.requests].count("objects.update")


def test_an_approved_update_is_written_to_the_linked_deal_after_the_decision(
    world: CrmWorld,
) -> None:
    world.connect(ALPHA)
    _, deal = world.seed(ALPHA, 0)
    item = deals.propose_deal_update(
        world.deps, ALPHA, deal, {"stage": "negotiation", "value": 125000}
    )
    # the card reads the HubSpot deal after it is queued: each field's value and when set
    (read,) = world.run_tasks()
    assert read["status"] == "read"
    kept = world.payload(item)["crm_read"]
    before = _hubspot_deal(world, ALPHA, "9001")
    assert kept["deal"] == "9001"
    assert kept["fields"]["dealstage"]["value"] == before["dealstage"]
    assert kept["fields"]["amount"]["set_at"]
    with world.deps.db.transaction(ALPHA) as cur:
        (row,) = approvals.pending_detailed(cur)
    card = approval_cards.detail(row, [])
    assert card["crm_read"]["fields"]["amount"]["value"] == before["amount"]

    decided = world.decide(item, "approve")
    assert decided.status_code == 200, decided.get_json()
    # decided and committed; HubSpot not yet touched: the write is the task's, after it
    assert _hubspot_deal(world, ALPHA, "9001") == before
    assert world.pushes(ALPHA)[0]["status"] == "queued"
    (answer,) = world.run_tasks()
    assert (answer["status"], answer["remote_id"]) == ("written", "9001")
    after = _hubspot_deal(world, ALPHA, "9001")
    assert (after["dealstage"], after["amount"]) == ("contractsent", "125000.00")
    writes = _updates(world)
    assert writes == 1
    # a retried task (Cloud Tasks delivers it again) writes nothing more
    (again,) = [a for a in world.replay() if a.get("kind") == "deal_update"]
    assert again["duplicate"] is True and _updates(world) == writes
    versions = world.portals[ALPHA].get("deals", "9001").history["amount"]  # type: ignore[union-attr]
    assert [v.value for v in versions].count("125000.00") == 1
    assert world.pushes(ALPHA) == [
        {
            "kind": "deal_update",
            "source_id": item,
            "status": "written",
            "outcome": None,
            "remote_id": "9001",
            "conflict_item_id": None,
        }
    ]


def test_a_change_in_hubspot_since_the_read_is_put_to_a_person_who_keeps_either_side(
    world: CrmWorld,
) -> None:
    world.connect(ALPHA)
    _, first = world.seed(ALPHA, 0)
    _, second = world.seed(ALPHA, 1)
    items = [
        deals.propose_deal_update(world.deps, ALPHA, d, {"value": 99000}) for d in (first, second)
    ]
    world.run_tasks()  # both cards read HubSpot
    read_amount = world.payload(items[0])["crm_read"]["fields"]["amount"]["value"]
    for deal_id in ("9001", "9002"):  # a person in HubSpot changes the amounts meanwhile
        world.portals[ALPHA].update("deals", deal_id, {"amount": "1.00"})
    for item in items:
        assert world.decide(item, "approve").status_code == 200
    answers = world.run_tasks()
    assert [a["status"] for a in answers] == ["conflict", "conflict"]
    assert _hubspot_deal(world, ALPHA, "9001")["amount"] == "1.00"  # nothing overwritten
    conflicts = [a["conflict_item_id"] for a in answers]
    # the conflict card shows ours, what we read and HubSpot's now, for a person to choose
    with world.deps.db.transaction(ALPHA) as cur:
        rows = {r["id"]: r for r in approvals.pending_detailed(cur, kind="crm_conflict")}
    card = approval_cards.detail(rows[conflicts[0]], [])
    (amount,) = card["fields"]
    assert (amount["field"], amount["ours"], amount["read"], amount["theirs"]) == (
        "value",
        "99000.00",
        read_amount,
        "1.00",
    )
    assert amount["changed_at"] and card["choices"] == ["ours", "theirs"]
    assert card["deal"] == {"id": first, "name": "Deal 0"} and card["editable"] == ["keep"]
    statuses = [p["status"] for p in world.pushes(ALPHA)]
    assert statuses == ["conflict", "conflict"]

    # ours: written again, against HubSpot's value now
    assert world.decide(conflicts[0], "approve").status_code == 200
    (rewritten,) = world.run_tasks()
    assert rewritten["status"] == "written"
    assert _hubspot_deal(world, ALPHA, "9001")["amount"] == "99000.00"
    # theirs: our deal takes HubSpot's value; HubSpot is left as it is
    kept = world.decide(conflicts[1], "edit", edited={"keep": "theirs"})
    assert kept.status_code == 200, kept.get_json()
    assert world.run_tasks() == []
    (ours,) = world.rows(f"SELECT value FROM deals WHERE id = '{second}'")
    assert str(ours["value"]) == "1.00"
    assert _hubspot_deal(world, ALPHA, "9002")["amount"] == "1.00"
    wrong = world.decide(items[0], "edit", edited={"keep": "both"})
    assert wrong.status_code in (400, 409, 422)


def test_a_card_approved_before_its_read_shows_hubspots_value_before_replacing_it(
    world: CrmWorld,
) -> None:
    world.connect(ALPHA)
    _, deal = world.seed(ALPHA, 0)
    item = deals.propose_deal_update(world.deps, ALPHA, deal, {"value": 70000})
    assert world.decide(item, "approve").status_code == 200
    answers = world.run_tasks()  # the read finds it decided; the write never saw HubSpot's
    statuses = sorted(str(a.get("status")) for a in answers)
    assert statuses == ["conflict", "skipped"]
    assert _hubspot_deal(world, ALPHA, "9001")["amount"] != "70000.00"


def test_a_paused_connection_keeps_the_write_until_the_org_reconnects(world: CrmWorld) -> None:
    world.connect(ALPHA)
    _, deal = world.seed(ALPHA, 0)
    item = deals.propose_deal_update(world.deps, ALPHA, deal, {"stage": "proposal"})
    world.run_tasks()
    world.hubspot.accounts.uninstall(PORTAL_ALPHA)  # HubSpot no longer honours the token
    assert world.decide(item, "approve").status_code == 200
    (waiting,) = world.run_tasks()
    assert waiting["status"] == "waiting"
    (connection,) = world.rows("SELECT status FROM crm_connections")
    assert connection["status"] == "paused"
    assert _hubspot_deal(world, ALPHA, "9001")["dealstage"] != "decisionmakerboughtin"
    world.connect(ALPHA)  # an admin reconnects: what waited goes now
    (resumed,) = world.run_tasks()
    assert resumed["status"] == "written"
    assert _hubspot_deal(world, ALPHA, "9001")["dealstage"] == "decisionmakerboughtin"


PORTAL_ALPHA = "101"


def test_an_unlinked_deal_or_an_org_without_hubspot_is_recorded_and_not_written(
    world: CrmWorld,
) -> None:
    world.connect(ALPHA)
    _, unlinked = world.seed(ALPHA, 0, linked=False)
    _, betas = world.seed(BETA, 0)  # beta never connected HubSpot
    item = deals.propose_deal_update(world.deps, ALPHA, unlinked, {"value": 10})
    other = deals.propose_deal_update(world.deps, BETA, betas, {"value": 20})
    assert world.run_tasks() == []  # nothing to read for either card
    assert world.decide(item, "approve").status_code == 200
    assert world.decide(other, "approve", org=BETA).status_code == 200
    assert [a["status"] for a in world.run_tasks()] == ["unlinked"]
    assert world.pushes(ALPHA)[0]["status"] == "unlinked"
    (beta,) = world.pushes(BETA)
    assert (beta["status"], beta["outcome"]) == (
        "not_connected",
        "HubSpot is not connected to this organisation",
    )
    assert _updates(world) == 0


def test_another_org_never_reaches_this_orgs_portal(world: CrmWorld) -> None:
    world.connect(ALPHA)
    world.connect(BETA)
    _, alphas = world.seed(ALPHA, 0)
    _, betas = world.seed(BETA, 0)  # linked to deal 9001 too, in beta's own portal
    alpha_before = _hubspot_deal(world, ALPHA, "9001")
    item = deals.propose_deal_update(world.deps, ALPHA, alphas, {"value": 31337})
    world.run_tasks()
    # beta's person cannot decide alpha's card
    refused = world.decide(item, "approve", org=BETA)
    assert refused.status_code == 404
    assert world.pushes(ALPHA) == [] and world.pushes(BETA) == []
    # alpha's task, re-addressed to beta's org: not found under beta's RLS, nothing written
    assert world.decide(item, "approve").status_code == 200
    (task,) = [t for n, t in world.transport.tasks.items() if n not in world.done]
    body = json.loads(task.body)
    body["task"]["org_id"] = BETA
    stolen = world.post(json.dumps(body).encode())
    assert stolen["status_code"] == 404
    assert _hubspot_deal(world, ALPHA, "9001") == alpha_before
    # beta's own approval of its deal 9001 goes to beta's portal only
    theirs = deals.propose_deal_update(world.deps, BETA, betas, {"value": 4242})
    world.run_tasks()
    assert world.decide(theirs, "approve", org=BETA).status_code == 200
    world.run_tasks()
    assert _hubspot_deal(world, BETA, "9001")["amount"] == "4242.00"
    assert _hubspot_deal(world, ALPHA, "9001")["amount"] == "31337.00"  # alpha's own task
    assert [p["remote_id"] for p in world.pushes(BETA)] == ["9001"]


def test_a_read_delivered_before_its_card_commits_is_retried_not_dropped(world: CrmWorld) -> None:
    """Cloud Tasks can deliver the card's read before the transaction that queued it commits:
    it answers 404 (retried), and the read lands once the card is there."""
    world.connect(ALPHA)
    _, deal = world.seed(ALPHA, 0)
    early = {"task": {"kind": "crm.read", "org_id": ALPHA, "item_id": "not-committed-yet"}}
    answer = world.post(json.dumps(early).encode())
    assert answer["status_code"] == 404 and answer["error"]["code"] == "crm_push_not_yet"
    item = deals.propose_deal_update(world.deps, ALPHA, deal, {"value": 1})
    (read,) = world.run_tasks()
    assert read["status"] == "read" and "crm_read" in world.payload(item)
