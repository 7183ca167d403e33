"""The ``make run`` scenes beside the team's CRM (issue 36): the demo org connects a HubSpot
portal (the stand-in, ``colony.testing.hubspot_server``) through the admin API's real OAuth
connect and callback, before the campaign runs; so every message the campaign sends is
logged on its HubSpot contact and deal, and at the end an approved deal update is written
to the HubSpot deal. What HubSpot then holds is printed.

The portal holds what the team's HubSpot would: the demo org's people (same emails) and the
demo's deals as the team brought them into HubSpot, each naming ours in ``colony_deal_id``.
After the OAuth connect the admin maps the stages (the admin API's one editable mapping) and
starts the backfill
(``colony.flows.crm.backfill``, run by the crm function): it adopts our contacts by email and
our deals by that key (nothing twinned, nothing linked by hand; a record it could not match
would come in as new), and its counts are printed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

from colony.errors import ConfigError
from colony.local.demo_context import DemoContext
from colony.store import fetch_all, fetch_one
from colony.testing.hubspot_server import HubSpotServer
from colony.testing.hubspot_world import HubSpotWorld

PORTAL = "62515"
REDIRECT = "http://127.0.0.1/overview/crm/hubspot/callback"  # our page; the demo posts for it
STAGES = {
    "discovery": "appointmentscheduled",
    "demo": "presentationscheduled",
    "proposal": "decisionmakerboughtin",
    "negotiation": "contractsent",
    "closed_won": "closedwon",
    "closed_lost": "closedlost",
}
NEXT = {"discovery": "demo", "demo": "proposal", "proposal": "negotiation"}
WAIT_SECONDS = 60.0


@contextmanager
def hubspot_stand_in(say: Callable[[str], None]) -> Iterator[tuple[HubSpotServer, dict[str, str]]]:
    """Serve a HubSpot portal; yield it and the functions' environment that points at it."""
    with HubSpotServer(HubSpotWorld(PORTAL)) as hubspot:
        say(f"serving the HubSpot stand-in: portal {PORTAL} on {hubspot.url}")
        yield (
            hubspot,
            {
                "COLONY_HUBSPOT_BASE_URL": hubspot.url,
                "COLONY_HUBSPOT_AUTH_URL": hubspot.authorize_url,
                "COLONY_HUBSPOT_CLIENT_ID": hubspot.accounts.client_id,
                "COLONY_HUBSPOT_CLIENT_SECRET": hubspot.accounts.client_secret,
                "COLONY_HUBSPOT_REDIRECT_URI": REDIRECT,
            },
        )


def connect_hubspot(demo: DemoContext, hubspot: HubSpotServer) -> None:
    """The team's records in the portal; its admin connects HubSpot, maps the stages and
    backfills the org from it."""
    from colony.local.tokens import mint_local_token

    world, org = hubspot.worlds[PORTAL], demo.org_id
    filled = _fill(demo, world)
    admin = mint_local_token(demo.settings.data_dir, org, "local-admin", org_claim="v2")
    headers = {"Authorization": f"Bearer {admin}"}
    base = f"{demo.servers.urls['admin']}/orgs/{org}/crm/hubspot"
    with httpx.Client(timeout=30, headers=headers) as http:
        started = http.post(f"{base}/connect", json={})
        if started.status_code != 201:
            raise ConfigError(f"connecting HubSpot failed: {started.status_code} {started.text}")
        hubspot.consent_as(PORTAL)  # the admin, signed in to the portal, allows the app
        back = httpx.get(started.json()["authorize_url"], follow_redirects=False, timeout=30)
        query = {k: v[0] for k, v in parse_qs(urlsplit(back.headers["location"]).query).items()}
        done = http.post(f"{base}/callback", json={"code": query["code"], "state": query["state"]})
        answer = done.json()
        demo.say(
            f"HubSpot connected through OAuth: portal {answer.get('account_id')},"
            f" {answer.get('status')}; the team's portal holds {filled}"
        )
        mapped = [{"pipeline_id": "default", "stage_id": s, "stage": o} for o, s in STAGES.items()]
        _ok(http.put(f"{base}/stages", json={"stages": mapped}), "mapping the stages")
        _ok(http.post(f"{base}/backfill", json={}), "starting the backfill")
        job = _wait(demo, "the backfill", lambda: _finished(http.get(f"{base}/backfill")))
    demo.say(
        f"  backfilled: {job['rows_done']} records read, {job['rows_created']} new here"
        " (each company is a new link: we keep no company table),"
        f" {job['rows_updated']} already ours (contacts by email, deals by colony_deal_id),"
        f" {job['rows_rejected']} held; status {job['status']}"
    )


def _ok(answer: httpx.Response, what: str) -> None:
    if answer.status_code >= 300:
        raise ConfigError(f"{what} failed: {answer.status_code} {answer.text}")


def _finished(answer: httpx.Response) -> Any:
    _ok(answer, "reading the backfill")
    job = answer.json()
    if job["status"] in ("failed", "paused"):
        raise ConfigError(f"the backfill stopped: {job['status']} {job.get('failure')}")
    return job if job["status"] == "completed" else None


def _fill(demo: DemoContext, world: HubSpotWorld) -> str:
    with demo.db.transaction(demo.org_id) as cur:
        contacts = fetch_all(
            cur,
            "SELECT id, name, email, title, company, company_domain FROM contacts"
            " ORDER BY external_id",
        )
        deals = fetch_all(
            cur,
            "SELECT id, name, stage, value, close_date, contact_id FROM deals ORDER BY external_id",
        )
    ours: dict[str, str] = {}
    # as the team's HubSpot has them (the backfill writes HubSpot's values over ours: the CRM
    # is the record, so the portal holds the same names, titles and companies)
    firms: dict[tuple[str, str], str] = {}
    # the team keeps in HubSpot the people it can email: a contact of ours without an email
    # has no key a HubSpot record could be matched by, so it would come in as a twin
    contacts = [c for c in contacts if c["email"]]
    for c in contacts:
        first, _, last = str(c["name"]).partition(" ")
        firm = (str(c["company"] or ""), str(c["company_domain"] or ""))
        if firm[0] and firm not in firms:
            firms[firm] = world.create("companies", {"name": firm[0], "domain": firm[1]}).id
        properties = {"firstname": first, "lastname": last, "email": c["email"]}
        to = [("companies", firms[firm])] if firm in firms else []
        made = world.create("contacts", properties | {"jobtitle": c["title"]}, links=to)
        ours[c["id"]] = made.id
    for d in deals:
        properties = {
            "dealname": d["name"],
            "amount": f"{d['value']:.2f}" if d["value"] is not None else None,
            "pipeline": "default",
            "dealstage": STAGES[d["stage"]],
            "closedate": f"{d['close_date']}T00:00:00.000Z" if d["close_date"] else None,
            "colony_deal_id": d["id"],  # the key the team kept when it brought our deals in
        }
        to = [("contacts", ours[d["contact_id"]])] if d["contact_id"] in ours else []
        world.create("deals", properties, links=to)
    return f"{len(firms)} companies, {len(contacts)} contacts and {len(deals)} deals"


def run_crm_demo(demo: DemoContext, hubspot: HubSpotServer) -> None:
    """What the campaign's sends logged in HubSpot; then a deal update approved and written."""
    world, say = hubspot.worlds[PORTAL], demo.say
    emails = list(world.live("emails"))
    replies = sum(e.properties.get("hs_email_direction") == "INCOMING_EMAIL" for e in emails)
    say(
        f"HubSpot now holds {len(emails)} logged email(s): {len(emails) - replies} the campaign"
        f" sent, {replies} repl{'y' if replies == 1 else 'ies'} received"
    )
    for email in emails[-2:]:
        to = sorted(world.linked("emails", email.id, "contacts"))
        deals = sorted(world.linked("emails", email.id, "deals"))
        subject = email.properties.get("hs_email_subject")
        say(f"  email {email.id} {subject!r} on contact {to} and deal {deals}")
    _approved_deal_update(demo, world)


def _approved_deal_update(demo: DemoContext, world: HubSpotWorld) -> None:
    from colony.adapters.transport_local import LocalTransport
    from colony.flows.pipeline import deals
    from colony.testing.inline import local_deps

    org, say = demo.org_id, demo.say
    with demo.db.transaction(org) as cur:
        deal = fetch_one(
            cur,
            "SELECT d.id, d.name, d.stage, d.value, l.remote_id FROM deals d"
            " JOIN crm_links l ON l.entity_id = d.id AND l.object_type = 'deal'"
            " WHERE d.stage = ANY(%s) ORDER BY d.external_id LIMIT 1",
            (list(NEXT),),
        )
    if deal is None:
        return
    changes = {"stage": NEXT[deal["stage"]], "value": round(float(deal["value"] or 0) * 1.1)}
    remote = world.get("deals", str(deal["remote_id"]))
    assert remote is not None
    before = {k: remote.properties.get(k) for k in ("dealstage", "amount")}
    transport = LocalTransport(demo.servers.urls)
    try:
        item = deals.propose_deal_update(
            local_deps(demo.settings, demo.db, transport), org, deal["id"], changes
        )
        _wait(demo, "the card's read of the HubSpot deal", lambda: _card_read(demo, item))
        answer = httpx.post(
            demo.servers.urls["approval"],
            json={"item_id": item, "action": "approve"},
            headers={"Authorization": f"Bearer {demo.token}"},
            timeout=30,
        )
        say(f"approved the deal update for {deal['name']!r}: {answer.status_code}")
        status = _wait(demo, "the write-back", lambda: _pushed(demo, item))
    finally:
        transport.close()
    after = {k: remote.properties.get(k) for k in ("dealstage", "amount")}
    say(
        f"  HubSpot deal {remote.id}: {status}; dealstage {before['dealstage']} →"
        f" {after['dealstage']}, amount {before['amount']} → {after['amount']}"
    )


def _card_read(demo: DemoContext, item: str) -> Any:
    with demo.db.transaction(demo.org_id) as cur:
        row = fetch_one(
            cur, "SELECT payload ? 'crm_read' AS read FROM approval_items WHERE id = %s", (item,)
        )
    return row["read"] if row else None


def _pushed(demo: DemoContext, item: str) -> Any:
    with demo.db.transaction(demo.org_id) as cur:
        row = fetch_one(
            cur,
            "SELECT status FROM crm_pushes WHERE source_id = %s AND status <> 'queued'",
            (item,),
        )
    return row["status"] if row else None


def _wait(demo: DemoContext, what: str, check: Callable[[], Any]) -> Any:
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.2)  # polling the queue's outcome for display, bounded by the deadline
    raise ConfigError(f"{what} did not happen within {WAIT_SECONDS:.0f}s")
