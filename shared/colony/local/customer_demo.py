"""``make run``'s new customer (issue 17 item 6): a second org, Harbor Dental Group, takes the
path a real tenant takes, every step over HTTP to the locally served functions:

    Clerk ``organization.created`` (Svix-signed) ─► clerk-webhook: the org and its defaults
    admin API, as the org's admin: PUT its ICP, sequence library and settings
    admin API: declare an import ─► PUT the CSV to the signed GCS URL ─► start ─► poll;
        the error report (``errors.csv``) of its bad rows printed
    admin API: connect its Notion workspace ─► the backfill embeds its pages
    a campaign over the imported prospects, launched through the local transport

and neither org sees the other's rows. ``seed_customer_pages`` puts the org's Notion pages in
the local stand-in before the functions start (``knowledge_stand_ins`` calls it).
"""

from __future__ import annotations

import csv
import io
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import httpx

from colony.errors import ConfigError
from colony.local.demo import read_json
from colony.local.progress import wait_until
from colony.local.secrets import local_secrets
from colony.store import fetch_all, fetch_one
from colony.svix import sign_svix

if TYPE_CHECKING:
    from colony.local.demo_context import DemoContext
    from colony.testing.notion_server import NotionServer

HARBOR: dict[str, Any] = read_json("harbor.json")
OUTCOMES = """
SELECT output->>'outcome' AS outcome, count(*) AS n FROM run_steps
WHERE run_id = %s AND step_key LIKE 'done:%%' GROUP BY 1 ORDER BY 2 DESC, 1
"""
DRAFTS = """
SELECT a.payload->>'subject' AS subject, c.name, c.company,
       (SELECT s.quote || ' (' || s.source || ')' FROM contact_signals s
        WHERE s.contact_id = c.id AND s.source LIKE 'http%%'
        ORDER BY s.confidence DESC, s.observed_on DESC NULLS LAST LIMIT 1) AS quoted
FROM approval_items a
JOIN contacts c ON c.id = a.subject_id WHERE a.run_id = %s ORDER BY c.external_id
"""
RESEARCHED = """
SELECT count(*) AS companies, coalesce(sum(pages), 0) AS pages,
       coalesce(sum(downloads), 0) AS downloads,
       count(*) FILTER (WHERE outcome = 'researched') AS researched
FROM research_jobs WHERE status = 'done'
"""
NOTION_TOKEN = "secret_harbor_local_notion"  # the stand-in's token of the customer's workspace


def prospects_csv() -> bytes:
    """The customer's CRM export, as its admin downloads it (CRLF, a formula cell)."""
    return ("\r\n".join(HARBOR["prospects_csv"]) + "\r\n").encode()


def seed_customer_pages(notion: NotionServer) -> None:
    """The new org's own Notion pages, in databases of a workspace distinct from the demo's,
    and the integration token of that workspace (the one its admin connects it with)."""
    seed_workspace(notion, HARBOR["notion"]["workspace_id"], NOTION_TOKEN, HARBOR["notion"])


def seed_workspace(
    notion: NotionServer, workspace: str, token: str, content: dict[str, Any]
) -> None:
    """A demo workspace on the Notion stand-in: its integration token, and its pages (the
    demo files' ``pages``: id, title, database, blocks as ``[kind, text]`` pairs)."""
    from colony.testing.notion_server import block

    notion.add_token(token, workspace)
    for page in content["pages"]:
        blocks = [block(kind, text) for kind, text in page["blocks"]]
        notion.put_page(
            page["id"],
            page["title"],
            blocks,
            parent_database=page["database"],
            workspace=workspace,
        )


@dataclass(frozen=True)
class NewCustomer:
    """What the scene did, as the functions answered it (the test checks it against the
    database)."""

    org_id: str
    clerk: dict[str, Any]
    import_job: dict[str, Any]
    errors: list[dict[str, str]]  # the error report's rows
    backfill: dict[str, Any]
    chunks: int
    run: dict[str, Any]
    drafts: int


class AdminApi:
    """The admin function, called as the org's admin (a Clerk v2 token with ``o.rol``)."""

    def __init__(self, http: httpx.Client, url: str, token: str) -> None:
        self.http, self.url = http, url
        self.headers = {"Authorization": f"Bearer {token}"}

    def __call__(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        response = self.http.request(method, self.url + path, headers=self.headers, **kwargs)
        if response.status_code >= 400:
            raise ConfigError(f"{method} {path}: {response.status_code} {response.text[:300]}")
        return response


def run_new_customer_demo(
    demo: DemoContext, *, timeout: float = 180, clerk_secret: str | None = None
) -> NewCustomer:
    """Run the scene; ``clerk_secret`` is the ``whsec_`` the clerk-webhook was given when it
    is not the local stack's own (``local_secrets``)."""
    from colony.local.tokens import mint_local_token

    say, urls = demo.say, demo.servers.urls
    org = HARBOR["org"]
    org_id = org["id"]
    say(f"a new customer: {org['name']} signs up; Clerk posts organization.created…")
    with httpx.Client(timeout=60) as http:
        secret = (
            clerk_secret or local_secrets(demo.settings.data_dir)["COLONY_CLERK_WEBHOOK_SECRET"]
        )
        clerk = _clerk_created(http, urls["clerk-webhook"], secret)
        say(f"  clerk-webhook: {clerk}")
        token = mint_local_token(demo.settings.data_dir, org_id, "harbor-admin", org_claim="v2")
        admin = AdminApi(http, urls["admin"], token)
        base = f"/orgs/{org_id}"
        icp = admin("PUT", f"{base}/icp", json=HARBOR["icp"]).json()
        library = admin("PUT", f"{base}/sequences", json=HARBOR["sequences"]).json()
        admin("PUT", f"{base}/settings", json=HARBOR["settings"])
        # campaign email carries it in its footer; without it the launch below is refused
        admin("PUT", f"{base}/postal-address", json={"postal_address": HARBOR["postal_address"]})
        steps = sum(len(s["steps"]) for s in library["sequences"])
        say(
            f"  admin API: ICP v{icp['version']} ({len(HARBOR['icp']['anti_icp_rules'])}"
            f" anti-ICP rule), {len(library['sequences'])} sequence of {steps} steps,"
            f" settings (competitors: {', '.join(HARBOR['settings']['competitors'])})"
        )
        job, errors = _import(admin, http, base, say, timeout, demo.servers.check)
        backfill = _notion(admin, base, say, timeout, demo.servers.check)
    chunks = _count(demo, org_id, "SELECT count(*) AS n FROM kc_chunks WHERE source = 'notion'")
    say(
        f"  backfill {backfill['status']}: {backfill['pages_seen']} pages seen,"
        f" {backfill['pages_synced']} embedded, {backfill['pages_skipped']} unchanged;"
        f" the org's Knowledge Core holds {chunks} Notion chunks"
    )
    run, drafts = _campaign(demo, org_id, timeout)
    _isolation(demo, org_id, token)
    return NewCustomer(org_id, clerk, job, errors, backfill, chunks, run, drafts)


def _clerk_created(http: httpx.Client, url: str, secret: str) -> dict[str, Any]:
    org = HARBOR["org"]
    data = {"id": org["id"], "object": "organization", "name": org["name"], "slug": org["slug"]}
    body = httpx.Request("POST", url, json={"type": "organization.created", "data": data})
    raw = body.read()
    # a fixed id: a second ``make run`` is Svix redelivering it, which the webhook ignores
    headers = sign_svix(secret, raw, f"msg_{org['id']}_created", datetime.now(UTC))
    response = http.post(url, content=raw, headers=headers)
    if response.status_code != 200:
        raise ConfigError(f"clerk-webhook: {response.status_code} {response.text[:300]}")
    return dict(response.json())


def _import(
    admin: AdminApi,
    http: httpx.Client,
    base: str,
    say: Any,
    timeout: float,
    alive: Callable[[], object],
) -> tuple[dict[str, Any], list[dict[str, str]]]:
    data = prospects_csv()
    declare = {"kind": "prospects", "format": "csv", "filename": "harbor-crm.csv"}
    job = admin("POST", f"{base}/imports", json={**declare, "size_bytes": len(data)}).json()
    upload = job["upload"]
    put = http.put(upload["url"], content=data, headers=upload["headers"])
    if put.status_code != 200:
        raise ConfigError(f"the signed upload was refused: {put.status_code} {put.text[:200]}")
    admin("POST", f"{base}/imports/{job['id']}/start")
    say(
        f"  import {job['id'][:8]}: {len(data)} bytes PUT to its signed GCS URL, started;"
        " the data-lifecycle function runs it…"
    )
    seen: set[str] = set()

    def finished() -> dict[str, Any] | None:
        shown = dict(admin("GET", f"{base}/imports/{job['id']}").json())
        if shown["status"] not in seen:  # progress, once per status
            seen.add(shown["status"])
            say(f"    {shown['status']}: {shown.get('rows_done') or 0} rows done")
        return shown if shown["status"] in ("completed", "failed") else None

    done: dict[str, Any] = wait_until("the import job", finished, timeout, alive=alive)
    report = admin("GET", f"{base}/imports/{job['id']}/errors.csv").text
    errors = list(csv.DictReader(io.StringIO(report)))
    say(
        f"  import {done['status']}: {done['rows_total']} rows, {done['rows_created']} created,"
        f" {done['rows_updated']} updated, {done['rows_rejected']} rejected; errors.csv:"
    )
    for row in errors:
        say(
            f"    row {row['row']} (line {row['line']}) {row['field']}: {row['reason']}"
            f" — {row['value']!r}"
        )
    return done, errors


def _notion(
    admin: AdminApi, base: str, say: Any, timeout: float, alive: Callable[[], object]
) -> dict[str, Any]:
    notion = HARBOR["notion"]
    body = {"workspace_id": notion["workspace_id"], "token": NOTION_TOKEN}
    connected = admin("POST", f"{base}/notion", json={**body, "domains": notion["databases"]})
    sync_id = connected.json()["backfill"]["sync_id"]
    say(
        f"  Notion workspace {notion['workspace_id']!r} connected"
        f" ({', '.join(sorted(set(notion['databases'].values())))}); backfill {sync_id[:11]}…"
    )

    def done() -> dict[str, Any] | None:
        syncs = admin("GET", f"{base}/notion").json()["syncs"]
        sync = next((s for s in syncs if s["id"] == sync_id), None)
        return sync if sync and sync["status"] in ("done", "failed") else None

    return dict(wait_until("the Notion backfill", done, timeout, alive=alive))


def _campaign(demo: DemoContext, org_id: str, timeout: float) -> tuple[dict[str, Any], int]:
    from colony.adapters.transport_local import LocalTransport
    from colony.flows.campaigns import campaign
    from colony.llm.agent_call import llm_from_settings
    from colony.local.demo_context import wait_for_run
    from colony.testing.inline import local_deps

    db = demo.db
    transport = LocalTransport(demo.servers.urls)
    deps = local_deps(demo.settings, db, transport, llm_from_settings(demo.settings, db))
    try:
        with db.transaction(org_id) as cur:
            ids = [r["id"] for r in fetch_all(cur, "SELECT id FROM contacts ORDER BY external_id")]
        campaign_id = campaign.create_campaign(
            deps,
            org_id,
            name=f"Harbor: new-office signal {uuid.uuid4().hex[:6]}",
            angle="Signal",
            tier="T1",
            contact_ids=ids,
        )
        run_id = campaign.launch(deps, org_id, campaign_id)
        demo.say(f"  campaign launched as {run_id} over its {len(ids)} imported prospects…")
        started = time.perf_counter()
        run = dict(wait_for_run(db, org_id, run_id, len(ids), timeout, alive=demo.servers.check))
    finally:
        transport.close()
    with db.transaction(org_id) as cur:
        outcomes = fetch_all(cur, OUTCOMES, (run_id,))
        drafts = fetch_all(cur, DRAFTS, (run_id,))
        researched = fetch_one(cur, RESEARCHED)
    if researched and researched["companies"]:
        demo.say(
            f"  research (before AGT-003): {researched['companies']} companies read from their"
            f" websites ({researched['researched']} with text), {researched['pages']} fetches,"
            f" {researched['downloads']} pages stored"
        )
    demo.say(
        f"  run {run['status']} in {time.perf_counter() - started:.1f}s:"
        f" {run['contacts_done']}/{run['contacts_total']} contacts ("
        + ", ".join(f"{o['outcome']} {o['n']}" for o in outcomes)
        + f"); {len(drafts)} drafts awaiting approval"
    )
    for draft in drafts[:3]:  # each quotes a page research stored
        demo.say(f"    {draft['company']}: “{draft['subject']}”")
        if draft["quoted"]:
            demo.say(f"      signal: “{draft['quoted']}”")
    if not drafts:
        # the offline model scores only what a contact carries; without research an export
        # has no firmographics or signals, and AGT-005 writes no outbound without a signal
        demo.say("    (no signals or firmographics to score: AGT-004 holds back)")
    return {"id": run_id, **run}, len(drafts)


def _isolation(demo: DemoContext, org_id: str, token: str) -> None:
    """Each org sees only its own rows (row-level security), and the new admin's token is
    refused on the demo org's admin API."""
    harbor = _count(demo, org_id, "SELECT count(*) AS n FROM contacts")
    demo_sees = _count(
        demo, demo.org_id, "SELECT count(*) AS n FROM contacts WHERE org_id = %s", (org_id,)
    )
    answer = httpx.get(
        f"{demo.servers.urls['admin']}/orgs/{demo.org_id}/icp",
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    demo.say(
        f"  isolation: {org_id} holds {harbor} contacts, {demo.org_id} sees {demo_sees} of"
        f" them; the new admin's token on {demo.org_id}'s ICP → {answer.status_code}"
    )


def _count(demo: DemoContext, org_id: str, sql: str, params: tuple[Any, ...] = ()) -> int:
    with demo.db.transaction(org_id) as cur:
        row = fetch_one(cur, sql, params)
    return int(row["n"]) if row else 0
