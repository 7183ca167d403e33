"""HubSpot sync benchmark (issue 36): a backfill, then a storm of webhook events, one JSON line.

The HubSpot stand-in runs in a process of its own (a 130,000-record world is ~364 MB; the
peak RSS target is our side's) with HubSpot's published limits on the real clock (110
requests per rolling 10 s per portal, 5 searches a second). This process connects an org to
it through OAuth (``flows.crm.connections``), then:

1. backfills it (``flows.crm.backfill``, the official client behind our shared limiter, the
   task's continuation run here, HubSpot's waits waited): records/s, our peak RSS, the calls
   made against the limit (and the 429s HubSpot answered), records lost or duplicated;
2. makes ``--events`` changes in the stand-in (edits, new contacts, deleted deals, merged
   contacts, moved stages: one webhook event each), delivers its journal signed as HubSpot
   signs it, in batches of 100, with 10% duplicates and 5% out of order, through the
   webhook flow (signature verified), and drains the org's events (each object read back
   through the client): events/s, and the differences between our state and the stand-in's
   final state (target 0).

Targets: peak RSS <= 300 MB, lost 0, duplicated 0, differences 0.

    python bench/crm_sync.py [--scale 0.02] [--events N]

``--scale 1`` is the issue's size: 100,000 contacts, 20,000 companies, 10,000 deals, 5,000
events (the backfill then takes minutes: HubSpot's limit, not ours, sets its pace).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import resource
import sys
import tempfile
import time
from decimal import Decimal
from multiprocessing.connection import Connection
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
from pydantic import SecretStr

from colony.contracts.admin import CrmCallback, CrmStageMapping
from colony.flows.crm import backfill, connections, events, stages, webhook
from colony.local import embedded
from colony.runtime.crm_access import HubSpotAccess
from colony.runtime.deps import utc_now
from colony.settings import Settings
from colony.store import Database, connect_factory
from colony.testing import hubspot_webhooks
from colony.testing.inline import InlineTransport, local_deps

ORG, PORTAL = "org_bench_crm", "62515"
REDIRECT = "https://colony.example/overview/crm/hubspot/callback"
URL = "https://admin.colony.example/crm/hubspot/webhook"  # the admin function serves it
TARGETS = {"peak_rss_mb": 300, "lost": 0, "duplicated": 0, "differences": 0}
STAGES = {
    "appointmentscheduled": "discovery",
    "qualifiedtobuy": "discovery",
    "presentationscheduled": "demo",
    "decisionmakerboughtin": "proposal",
    "contractsent": "negotiation",
    "closedwon": "closed_won",
    "closedlost": "closed_lost",
    "partner_intro": "discovery",
    "partner_won": "closed_won",
}
PIPELINE = {"partner_intro": "partnerships", "partner_won": "partnerships"}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- the stand-in, in its own process ---------------------------------------------------------


def _changes(world: Any, count: int, seed: int) -> list[dict[str, Any]]:
    """``count`` changes, one webhook event each; the journal."""
    rng = random.Random(seed)
    world.journal = []
    contacts = [o.id for o in world.live("contacts")]
    deals = [o.id for o in world.live("deals")]
    companies = [o.id for o in world.live("companies")]
    pipelines = {p["id"]: [s["id"] for s in p["stages"]] for p in world.pipelines}
    n = 0
    while len(world.journal) < count:  # a change to the value it had is no event: skipped
        n += 1
        roll = rng.random()
        if roll < 0.45:
            field, value = rng.choice((("jobtitle", "VP"), ("lastname", "Berg"), ("email", "")))
            value = f"moved.{n}@mail.example" if field == "email" else f"{value} {n}"
            world.update("contacts", rng.choice(contacts), {field: value})
        elif roll < 0.65:
            deal = rng.choice(deals)
            if rng.random() < 0.5:
                world.update("deals", deal, {"amount": f"{rng.randint(1, 900) * 100}.00"})
            else:
                pipeline = world.get("deals", deal).properties["pipeline"]
                world.update("deals", deal, {"dealstage": rng.choice(pipelines[pipeline])})
        elif roll < 0.73:
            world.update("companies", rng.choice(companies), {"name": f"Renamed Co {n}"})
        elif roll < 0.85:
            firm = rng.choice(companies)
            person = {"firstname": "New", "lastname": f"Person {n}", "email": f"new.{n}@x.example"}
            contacts.append(world.create("contacts", person, links=[("companies", firm)]).id)
        elif roll < 0.93:
            world.archive("deals", deals.pop(rng.randrange(len(deals))))
        else:
            merged = contacts.pop(rng.randrange(len(contacts)))
            world.merge("contacts", rng.choice(contacts), merged)
    journal = list(world.journal)
    world.journal = None
    return journal


def _snapshot(world: Any) -> dict[str, dict[str, Any]]:
    contacts = {o.id: o.properties for o in world.live("contacts")}
    return {
        "contacts": {
            i: (p.get("email"), p.get("firstname"), p.get("lastname")) for i, p in contacts.items()
        },
        "companies": {
            o.id: (o.properties.get("name"), o.properties.get("domain"))
            for o in world.live("companies")
        },
        "deals": {
            o.id: (
                o.properties.get("dealname"),
                o.properties.get("dealstage"),
                o.properties.get("amount"),
            )
            for o in world.live("deals")
        },
    }


def _serve(conn: Connection, companies: int, contacts: int, deals: int) -> None:
    from colony.testing.hubspot_accounts import peak
    from colony.testing.hubspot_seed import seeded_world  # in the child only
    from colony.testing.hubspot_server import HubSpotServer

    world = seeded_world(7, companies=companies, contacts=contacts, deals=deals, portal_id=PORTAL)
    server = HubSpotServer(world, clock=time.monotonic)
    refused, admitted = [0], []
    take = server.accounts.take

    def counted(*args: Any, **kwargs: Any) -> Any:
        over = take(*args, **kwargs)
        refused[0] += over is not None
        if over is None:
            admitted.append(time.monotonic())
        return over

    server.accounts.take = counted  # type: ignore[method-assign]
    server.consent_as(PORTAL)
    with server:
        accounts = server.accounts
        conn.send(
            {
                "url": server.url,
                "authorize": server.authorize_url,
                "client_id": accounts.client_id,
                "client_secret": accounts.client_secret,
            }
        )
        while (command := conn.recv()) != "stop":
            if command == "stats":
                crm = [r for r in server.requests if r.path.startswith("/crm/")]
                conn.send(
                    {"calls": len(crm), "rate_limited": refused[0], "peak_10s": peak(admitted)}
                )
            elif command == "snapshot":
                conn.send(_snapshot(world))
            else:
                conn.send(_changes(world, int(command[1]), int(command[2])))


# -- our side --------------------------------------------------------------------------------


def _connect(deps: Any) -> None:
    from colony.adapters.hubspot_oauth import hubspot_oauth
    from colony.runtime.org_secrets import secret_store

    auth = hubspot_oauth(deps.settings)
    try:
        url = connections.start(deps, auth, ORG, "bench_admin")["authorize_url"]
        answer = httpx.get(url, follow_redirects=False)
        query = parse_qs(urlsplit(answer.headers["location"]).query)
        callback = CrmCallback(code=SecretStr(query["code"][0]), state=SecretStr(query["state"][0]))
        connections.complete(deps, secret_store(deps.settings), auth, ORG, "bench_admin", callback)
    finally:
        auth.close()
    edit = [
        {"pipeline_id": PIPELINE.get(s, "default"), "stage_id": s, "stage": ours}
        for s, ours in STAGES.items()
    ]
    stages.put(deps, ORG, CrmStageMapping.model_validate({"stages": edit}), "bench_admin")


def _backfill(deps: Any, access: HubSpotAccess) -> tuple[dict[str, Any], float]:
    job = backfill.start(deps, ORG, "bench_admin", schedule=False)
    started = time.perf_counter()
    while job["status"] in ("queued", "running"):
        job = backfill.run_job(deps, access, ORG, job["id"], schedule=False)
        wait = job.pop("waiting_seconds", None)
        if wait:
            time.sleep(float(wait))  # the queue's delay, as Cloud Tasks would hold the task
    return job, time.perf_counter() - started


def _storm(journal: list[dict[str, Any]], seed: int) -> list[dict[str, Any]]:
    """The journal with 10% duplicates, then 5% of events moved later (out of order)."""
    rng = random.Random(seed)
    stream = list(journal)
    for event in rng.sample(journal, len(journal) // 10):
        stream.insert(rng.randrange(len(stream) + 1), dict(event, attemptNumber=1))
    for _ in range(len(journal) // 20):
        i = rng.randrange(len(stream) - 1)
        j = min(len(stream) - 1, i + rng.randint(1, 300))
        stream[i], stream[j] = stream[j], stream[i]
    return stream


def _deliver(deps: Any, access: HubSpotAccess, stream: list[dict[str, Any]]) -> float:
    secret = deps.settings.hubspot_client_secret or ""
    started = time.perf_counter()
    for batch in hubspot_webhooks.batches(stream):
        body, headers = hubspot_webhooks.signed(secret, URL, batch, int(time.time() * 1000))
        webhook.receive(
            deps,
            body,
            method="POST",
            uri=URL,
            signature_v3=headers["X-HubSpot-Signature-v3"],
            timestamp=headers["X-HubSpot-Request-Timestamp"],
        )
    while (drained := events.drain(deps, access, ORG, schedule=False))["status"] != "idle":
        if drained["status"] == "waiting":
            time.sleep(float(drained["waiting_seconds"]))
    return time.perf_counter() - started


def _ours(db: Database) -> dict[str, dict[str, Any]]:
    live = "l.archived_at IS NULL AND l.merged_into IS NULL"
    with db.transaction(ORG) as cur:
        cur.execute(
            "SELECT l.remote_id, c.email, c.name FROM crm_links l JOIN contacts c"
            " ON c.org_id = l.org_id AND c.id = l.entity_id"
            f" WHERE l.object_type = 'contact' AND {live} AND c.archived_at IS NULL"
        )
        contacts = {r[0]: (r[1], r[2]) for r in cur.fetchall()}
        cur.execute(
            "SELECT l.remote_id, l.properties ->> 'name', l.properties ->> 'domain'"
            f" FROM crm_links l WHERE l.object_type = 'company' AND {live}"
        )
        companies = {r[0]: (r[1], r[2]) for r in cur.fetchall()}
        cur.execute(
            "SELECT l.remote_id, d.name, d.stage, d.value FROM crm_links l JOIN deals d"
            " ON d.org_id = l.org_id AND d.id = l.entity_id"
            f" WHERE l.object_type = 'deal' AND {live} AND d.archived_at IS NULL"
        )
        deals = {r[0]: (r[1], r[2], r[3]) for r in cur.fetchall()}
    return {"contacts": contacts, "companies": companies, "deals": deals}


def _theirs(snapshot: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    contacts = {}
    for i, (email, first, last) in snapshot["contacts"].items():
        name = f"{first or ''} {last or ''}".strip() or email or f"HubSpot contact {i}"
        contacts[i] = (email, name)
    deals = {
        i: (name, STAGES[stage], Decimal(amount).quantize(Decimal("0.01")) if amount else None)
        for i, (name, stage, amount) in snapshot["deals"].items()
    }
    return {"contacts": contacts, "companies": snapshot["companies"], "deals": deals}


def differences(ours: dict[str, dict[str, Any]], theirs: dict[str, dict[str, Any]]) -> int:
    return sum(
        1
        for kind in theirs
        for key in set(ours[kind]) | set(theirs[kind])
        if ours[kind].get(key) != theirs[kind].get(key)
    )


def _counts(db: Database) -> dict[str, int]:
    with db.transaction(ORG) as cur:
        cur.execute(
            "SELECT (SELECT count(*) FROM contacts), (SELECT count(*) FROM deals),"
            " (SELECT count(*) FROM crm_links WHERE object_type = 'contact'),"
            " (SELECT count(*) FROM crm_links WHERE object_type = 'deal'),"
            " (SELECT count(*) FROM crm_links WHERE object_type = 'company')"
        )
        contacts, deals, contact_links, deal_links, company_links = cur.fetchone()
    return {
        "contacts": contacts,
        "deals": deals,
        "contact_links": contact_links,
        "deal_links": deal_links,
        "company_links": company_links,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=0.02, help="1: the issue's 130,000")
    parser.add_argument("--events", type=int, default=None, help="default 5,000 x scale")
    args = parser.parse_args()
    sizes = {
        "companies": max(10, int(20_000 * args.scale)),
        "contacts": max(50, int(100_000 * args.scale)),
        "deals": max(20, int(10_000 * args.scale)),
    }
    event_count = args.events or max(200, int(5_000 * args.scale))
    os.environ.setdefault("XDG_RUNTIME_DIR", f"/tmp/colony-runtime-{os.getuid()}")
    spawn = multiprocessing.get_context("spawn")
    ours_end, theirs_end = spawn.Pipe()
    child = spawn.Process(
        target=_serve, args=(theirs_end, sizes["companies"], sizes["contacts"], sizes["deals"])
    )
    child.start()
    stand_in = ours_end.recv()
    log(f"stand-in: {sizes} at {stand_in['url']}")
    try:
        with (
            embedded.scratch_database(Settings.from_env(), "bench_crm") as base,
            tempfile.TemporaryDirectory() as scratch,
        ):
            env = {
                "COLONY_DB_MODE": "dsn",
                "COLONY_DB_DSN": base.db_dsn or "",
                "COLONY_EMBEDDING_DIM": str(base.embedding_dim),
                "COLONY_DATA_DIR": scratch,
                "COLONY_HUBSPOT_BASE_URL": stand_in["url"],
                "COLONY_HUBSPOT_AUTH_URL": stand_in["authorize"],
                "COLONY_HUBSPOT_CLIENT_ID": stand_in["client_id"],
                "COLONY_HUBSPOT_CLIENT_SECRET": stand_in["client_secret"],
                "COLONY_HUBSPOT_REDIRECT_URI": REDIRECT,
            }
            settings = Settings.from_env(env)
            db = Database(connect_factory(base, "app"))
            with db.transaction(ORG) as cur:
                cur.execute("INSERT INTO organizations (id, name) VALUES (%s, 'bench')", (ORG,))
            deps = local_deps(settings, db, InlineTransport(), clock=utc_now)  # real time
            access = HubSpotAccess(deps)
            _connect(deps)
            job, seconds = _backfill(deps, access)
            ours_end.send("stats")
            after_backfill = ours_end.recv()
            counts = _counts(db)
            expected = sum(sizes.values())
            held = int(job["rows_rejected"])
            lost = (
                (sizes["contacts"] - counts["contact_links"])
                + (sizes["companies"] - counts["company_links"])
                + (sizes["deals"] - counts["deal_links"])
            )
            duplicated = (counts["contacts"] - counts["contact_links"]) + (
                counts["deals"] + held - counts["deal_links"]
            )
            log(f"backfill: {job['rows_done']:,} records in {seconds:.1f}s, {after_backfill}")
            ours_end.send(("changes", event_count, 11))
            journal = ours_end.recv()
            stream = _storm(journal, 13)
            storm_seconds = _deliver(deps, access, stream)
            ours_end.send("snapshot")
            diff = differences(_ours(db), _theirs(ours_end.recv()))
            ours_end.send("stats")
            final = ours_end.recv()
            access.close()
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            result = {
                "bench": "crm_sync",
                "scale": args.scale,
                **sizes,
                "records": int(job["rows_done"]),
                "expected": expected,
                "backfill_seconds": round(seconds, 1),
                "records_per_s": round(int(job["rows_done"]) / seconds, 1),
                "peak_rss_mb": round(peak, 1),
                "api_calls": after_backfill["calls"],
                "api_limit": "110 per 10 s per portal (we keep 100)",
                "api_peak_per_10s": after_backfill["peak_10s"],
                "rate_limited_429": after_backfill["rate_limited"],
                "held_unmapped": held,
                "lost": lost,
                "duplicated": duplicated,
                "events": len(journal),
                "deliveries": len(stream),
                "events_per_s": round(len(stream) / storm_seconds, 1),
                "event_api_calls": final["calls"] - after_backfill["calls"],
                "differences": diff,
            }
            result["meets_targets"] = (
                result["peak_rss_mb"] <= TARGETS["peak_rss_mb"]
                and lost == 0
                and duplicated == 0
                and diff == 0
                and result["records"] == expected
            )
            print(json.dumps(result), flush=True)
    finally:
        ours_end.send("stop")
        child.join(timeout=30)


if __name__ == "__main__":
    main()
