"""A deal of ours that the team brought into HubSpot is adopted by the sync, not twinned
(issue 36 item 5): the HubSpot deal names ours in ``colony_deal_id`` (our id or external id),
as ``make run``'s portal does. Real PostgreSQL, the sync's own ``apply``."""

from __future__ import annotations

from colony.flows.crm.apply import apply
from colony.ports import CrmRecord
from tests.conftest import PgDB

ORG = "org_alpha"
STAGES = {("default", "appointmentscheduled"): "discovery"}


def _deal(remote: str, key: str | None, at: str = "2026-01-05T09:00:00.000Z") -> CrmRecord:
    properties = {"dealname": f"HubSpot {remote}", "dealstage": "appointmentscheduled"}
    if key is not None:
        properties["colony_deal_id"] = key
    return CrmRecord("deals", remote, properties | {"amount": "1200"}, at)


def test_a_deal_naming_ours_is_adopted_once_and_others_come_in_new(testdb: PgDB) -> None:
    conn = testdb.owner_connection()
    cur = conn.cursor()
    cur.execute("INSERT INTO organizations (id, name) VALUES (%s, %s)", (ORG, ORG))
    for deal, external in (("d-1", "zp-deal-1"), ("d-2", "zp-deal-2")):
        cur.execute(
            "INSERT INTO deals (id, org_id, external_id, name, stage, value)"
            " VALUES (%s, %s, %s, %s, 'demo', 10)",
            (deal, ORG, external, deal),
        )
    conn.commit()
    conn.close()
    db = testdb.app()
    with db.transaction(ORG) as tx:
        # by our id, by our external id, a second HubSpot deal naming an adopted one, a key
        # we do not know, and none
        batch = [
            _deal("9001", "d-1"),
            _deal("9002", "zp-deal-2"),
            _deal("9003", "d-1"),
            _deal("9004", "d-404"),
            _deal("9005", None),
        ]
        outcome = apply(tx, ORG, "deals", batch, {}, STAGES)
    assert (outcome.created, outcome.updated) == (3, 2)
    rows = testdb.owner_rows(
        "SELECT l.remote_id, d.id, d.external_id, d.value FROM crm_links l"
        " JOIN deals d ON d.id = l.entity_id WHERE l.object_type = 'deal' ORDER BY l.remote_id"
    )
    adopted = {r["remote_id"]: (r["id"], r["external_id"]) for r in rows}
    assert adopted["9001"] == ("d-1", "zp-deal-1")  # ours, keeping our external id
    assert adopted["9002"] == ("d-2", "zp-deal-2")
    assert adopted["9003"][0] not in ("d-1", "d-2")  # d-1 was taken: new, never twice
    assert adopted["9004"][1] == "hubspot:9004" and adopted["9005"][1] == "hubspot:9005"
    assert testdb.owner_rows("SELECT count(*) AS n FROM deals")[0]["n"] == 5
    # HubSpot's values are the deal's now (the CRM is the record), a later read changes none
    assert {r["value"] for r in rows if r["id"] in ("d-1", "d-2")} == {1200}
    with db.transaction(ORG) as tx:
        again = apply(
            tx, ORG, "deals", [_deal("9001", "d-2", "2026-01-06T09:00:00.000Z")], {}, STAGES
        )
    assert (again.created, again.updated) == (0, 1)  # its link holds it: the key is not read
    assert testdb.owner_rows("SELECT entity_id FROM crm_links WHERE remote_id = '9001'") == [
        {"entity_id": "d-1"}
    ]
