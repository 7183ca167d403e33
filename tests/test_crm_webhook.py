"""HubSpot's webhook (issue 36, inbound), from outside: the stand-in's world journals its
changes as HubSpot's v3 events, signed and delivered in batches to the admin function's
``/crm/hubspot/webhook``, loaded from its real ``main.py``; the drain runs in the crm
function, as Cloud Tasks would call it,
against the real PostgreSQL, reading each record back through the official client.

Alpha holds portal 101, beta portal 202. A batch naming beta's portal lands in beta's events
only; one naming a portal no org holds is refused and recorded; a bad signature or an old
timestamp is a recorded 401 that keeps nothing.
"""

from __future__ import annotations

import random
from decimal import Decimal
from typing import Any

import pytest

from colony.flows.crm import backfill, events
from colony.runtime.crm_access import HubSpotAccess
from colony.testing import hubspot_webhooks
from colony.testing.hubspot_world import HubSpotWorld
from tests.test_crm_backfill import DEFAULT_STAGES, Sync, sync_fixture  # noqa: F401 (fixture)
from tests.test_crm_connect import ALPHA, BETA, connect

pytestmark = pytest.mark.covers("fn:admin", "fn:crm")

PATH = "/crm/hubspot/webhook"  # on the admin function
URL = f"http://localhost{PATH}"  # what the test client calls, and so what HubSpot signs
STAGES = {("default", s): ours for s, ours in DEFAULT_STAGES}


@pytest.fixture
def hook(sync: Sync, monkeypatch: pytest.MonkeyPatch) -> Any:
    return sync.api


def deliver(sync: Sync, hook: Any, batch: list[dict[str, Any]], **changes: Any) -> Any:
    secret = changes.get("secret", sync.hubspot.accounts.client_secret)
    stamp = changes.get("stamp", int(sync.clock.now.timestamp() * 1000))
    body, headers = hubspot_webhooks.signed(secret, URL, batch, stamp)
    return hook.post(PATH, data=body, headers=headers)


def backfilled(sync: Sync, org: str = ALPHA, portal: str = "101") -> HubSpotWorld:
    assert connect(sync, org, portal).status_code == 200
    sync.map_default(org)
    job = backfill.start(sync.deps, org, "user_1", schedule=False)
    access = HubSpotAccess(sync.deps)
    done = backfill.run_job(sync.deps, access, org, job["id"], schedule=False)
    access.close()
    assert done["status"] == "completed"
    world = sync.hubspot.world(portal)
    world.journal = []
    return world


def differences(sync: Sync, world: HubSpotWorld, org: str = ALPHA) -> list[Any]:
    """Where our live contacts and mapped deals differ from the stand-in's world."""
    ours = {
        ("contact", r["remote_id"]): (r["email"], r["name"])
        for r in sync.rows(
            "SELECT l.remote_id, c.email, c.name FROM crm_links l JOIN contacts c"
            " ON c.org_id = l.org_id AND c.id = l.entity_id"
            f" WHERE l.org_id = '{org}' AND l.object_type = 'contact'"
            " AND l.archived_at IS NULL AND l.merged_into IS NULL AND c.archived_at IS NULL"
        )
    }
    ours |= {
        ("deal", r["remote_id"]): (r["name"], r["stage"], r["value"])
        for r in sync.rows(
            "SELECT l.remote_id, d.name, d.stage, d.value FROM crm_links l JOIN deals d"
            " ON d.org_id = l.org_id AND d.id = l.entity_id"
            f" WHERE l.org_id = '{org}' AND l.object_type = 'deal'"
            " AND l.archived_at IS NULL AND l.merged_into IS NULL AND d.archived_at IS NULL"
        )
    }
    theirs: dict[tuple[str, str], Any] = {}
    for c in world.live("contacts"):
        p = c.properties
        name = f"{p.get('firstname') or ''} {p.get('lastname') or ''}".strip()
        theirs[("contact", c.id)] = (p.get("email"), name or p.get("email"))
    for d in world.live("deals"):
        stage = STAGES.get((d.properties["pipeline"] or "", d.properties["dealstage"] or ""))
        if stage is not None:  # an unmapped one is kept apart, flagged (test_crm_backfill)
            amount = Decimal(d.properties["amount"]) if d.properties.get("amount") else None
            theirs[("deal", d.id)] = (d.properties["dealname"], stage, amount)
    keys = set(ours) | set(theirs)
    return sorted((k, ours.get(k), theirs.get(k)) for k in keys if ours.get(k) != theirs.get(k))


def changes(world: HubSpotWorld) -> None:
    """A day in the portal: edits, a new contact, a deleted deal, a merge, a stage moved."""
    world.update("contacts", "1003", {"email": "new.address@mail.example", "lastname": "Okafor"})
    world.create("contacts", {"firstname": "Noor", "email": "noor@mail.example"})
    world.archive("deals", "9002")
    world.merge("contacts", "1004", "1005")  # 1005 into 1004
    world.update("deals", "9001", {"dealstage": "closedwon", "amount": "1234.50"})
    world.update("contacts", "1003", {"jobtitle": "CEO"})


def test_changes_arrive_through_signed_webhooks_even_twice_and_out_of_order(
    sync: Sync,
    hook: Any,
) -> None:
    world = backfilled(sync)
    assert differences(sync, world) == []
    changes(world)
    journal = list(world.journal or [])
    assert {e["subscriptionType"] for e in journal} >= {
        "contact.propertyChange",
        "contact.creation",
        "deal.deletion",
        "contact.merge",
    }
    assert differences(sync, world) != []
    shuffled = journal + random.Random(3).sample(journal, 4)  # duplicates
    shuffled.reverse()  # and out of order
    for batch in hubspot_webhooks.batches(shuffled, size=5):
        answer = deliver(sync, hook, batch)
        assert answer.status_code == 200, answer.get_json()
    kept = sync.count("SELECT count(*) AS n FROM crm_events")
    assert kept == len(journal)  # idempotent on eventId
    answers = sync.run_tasks()
    assert answers and all(a.status_code == 200 for a in answers), [a.get_json() for a in answers]
    assert differences(sync, world) == []
    assert sync.count("SELECT count(*) AS n FROM crm_events WHERE applied_at IS NULL") == 0
    # the deleted deal is archived, never kept live; the merged contact follows the survivor
    (deal,) = sync.rows(
        "SELECT d.archived_at, l.archived_at AS gone FROM crm_links l JOIN deals d"
        " ON d.id = l.entity_id WHERE l.remote_id = '9002' AND l.object_type = 'deal'"
    )
    assert deal["archived_at"] is not None and deal["gone"] is not None
    (merged,) = sync.rows(
        "SELECT merged_into, entity_id FROM crm_links WHERE remote_id = '1005'"
        " AND object_type = 'contact'"
    )
    assert merged == {"merged_into": "1004", "entity_id": None}
    # delivering the whole journal again changes nothing
    for batch in hubspot_webhooks.batches(journal):
        assert deliver(sync, hook, batch).get_json()["new"] == 0
    sync.run_tasks()
    assert differences(sync, world) == []


def test_a_bad_signature_or_an_old_timestamp_is_a_recorded_401(sync: Sync, hook: Any) -> None:
    world = backfilled(sync)
    world.update("contacts", "1003", {"jobtitle": "CEO"})
    batch = list(world.journal or [])
    forged = deliver(sync, hook, batch, secret="not-the-app-secret")
    old = deliver(sync, hook, batch, stamp=int(sync.clock.now.timestamp() * 1000) - 301_000)
    body, headers = hubspot_webhooks.signed(
        sync.hubspot.accounts.client_secret, URL, batch, int(sync.clock.now.timestamp() * 1000)
    )
    tampered = hook.post(PATH, data=body.replace(b"1003", b"1004"), headers=headers)
    unsigned = hook.post(PATH, data=body, headers={"Content-Type": "application/json"})
    assert [a.status_code for a in (forged, old, tampered, unsigned)] == [401] * 4
    reasons = sync.rows(
        "SELECT reason FROM rejected_deliveries WHERE function = 'admin' ORDER BY id"
    )
    assert [r["reason"] for r in reasons] == [
        "hubspot_bad_signature",
        "hubspot_stale_timestamp",
        "hubspot_bad_signature",
        "hubspot_unsigned",
    ]
    assert sync.count("SELECT count(*) AS n FROM crm_events") == 0
    assert sync.transport.tasks == {}
    assert deliver(sync, hook, batch).status_code == 200  # the real one is taken
    # signed right but not HubSpot's shape: a 400, never a 5xx
    stamp = int(sync.clock.now.timestamp() * 1000)
    for bad in (b"{", b'{"eventId": 1}', b'[{"subscriptionType": "contact.creation"}]'):
        headers = hubspot_webhooks.sign(
            sync.hubspot.accounts.client_secret, "POST", URL, bad, stamp
        )
        assert hook.post(PATH, data=bad, headers=headers).status_code == 400, bad


def test_a_portal_is_routed_only_to_the_org_that_holds_it(sync: Sync, hook: Any) -> None:
    alphas = backfilled(sync)
    betas = backfilled(sync, BETA, "202")
    betas.update("contacts", "1001", {"email": "beta.person@mail.example"})
    to_beta = deliver(sync, hook, list(betas.journal or []))
    assert to_beta.status_code == 200 and to_beta.get_json()["events"] == 1
    assert sync.rows("SELECT org_id FROM crm_events") == [{"org_id": BETA}]
    sync.run_tasks()
    assert differences(sync, betas, BETA) == [] and differences(sync, alphas) == []
    # a portal no org holds (never connected, or disconnected): refused, recorded
    stranger = HubSpotWorld("999")
    stranger.journal = []
    stranger.create("contacts", {"email": "someone@elsewhere.example"})
    refused = deliver(sync, hook, list(stranger.journal))
    assert refused.status_code == 403 and refused.get_json()["error"]["code"] == "org_scope"
    (rejection,) = sync.rows(
        "SELECT reason, claimed_org_id FROM rejected_deliveries WHERE function = 'admin'"
    )
    assert (
        rejection["reason"].startswith("hubspot_unknown_portal")
        and rejection["claimed_org_id"] is None
    )
    assert sync.count("SELECT count(*) AS n FROM crm_events") == 1
    # after beta disconnects, its portal's events are no longer taken
    off = sync.call("POST", f"/orgs/{BETA}/crm/hubspot/disconnect", sync.token(BETA), {})
    assert off.status_code == 200
    betas.update("contacts", "1002", {"jobtitle": "CFO"})
    assert deliver(sync, hook, list(betas.journal or [])[-1:]).status_code == 403


def test_events_wait_while_the_connection_is_paused_and_are_applied_after(
    sync: Sync, hook: Any
) -> None:
    world = backfilled(sync)
    world.update("contacts", "1003", {"email": "later@mail.example"})
    sync.hubspot.accounts.uninstall("101")
    assert deliver(sync, hook, list(world.journal or [])).status_code == 200
    access = HubSpotAccess(sync.deps)
    paused = events.drain(sync.deps, access, ALPHA, schedule=False)
    assert paused == {"status": "paused", "pending": 1}
    assert sync.count("SELECT count(*) AS n FROM crm_events WHERE applied_at IS NULL") == 1
    assert connect(sync, ALPHA, "101").status_code == 200
    applied = events.drain(sync.deps, access, ALPHA, schedule=False)
    access.close()
    assert applied["status"] == "applied" and applied["updated"] == 1
    assert differences(sync, world) == []
