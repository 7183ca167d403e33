"""``make run``'s campaign: every function served locally, a campaign over the demo org's
prospects launched through the local transport, followed to completion, its approval queue
printed, one message approved over HTTP into the outbox."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import httpx

from colony.flows.campaigns import campaign
from colony.llm.agent_call import llm_from_settings
from colony.local.demo_context import DemoContext, wait_for_run
from colony.local.functions import BundleSource, FunctionServers
from colony.local.outbound_demo import run_outbound_demo  # the scene that follows
from colony.local.secrets import local_secrets
from colony.local.stack import update_stack
from colony.registry.functions import FUNCTIONS
from colony.settings import Settings
from colony.store import fetch_all, fetch_one
from colony.testing.smtp_server import SmtpServer


def function_env(settings: Settings, app_dsn: str) -> dict[str, str]:
    """The environment every local function process gets (like terraform's env vars)."""
    return {
        "COLONY_DB_MODE": "dsn",
        "COLONY_DB_DSN": app_dsn,
        "COLONY_TRANSPORT": "local",
        "COLONY_DATA_DIR": str(settings.data_dir.resolve()),
        "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", f"/tmp/colony-runtime-{os.getuid()}"),
        **local_secrets(settings.data_dir),
    }


@contextmanager
def local_mail(say: Callable[[str], None]) -> Iterator[SmtpServer]:
    """A real SMTP server on 127.0.0.1 for the demo's approved messages (``mail.env()``
    points the functions at it)."""
    with SmtpServer() as server:
        say(f"local SMTP server on {server.host}:{server.port} (approved messages go here)")
        yield server


@contextmanager
def demo_functions(
    settings: Settings,
    org_id: str,
    app_dsn: str,
    say: Callable[[str], None],
    *,
    extra_env: Mapping[str, str] | None = None,
    bundles: Mapping[str, BundleSource] | None = None,
) -> Iterator[tuple[FunctionServers, str]]:
    """Every registered function served locally (one functions-framework process each) and
    a local JWT for the demo org; both recorded in ``.colony/stack.json``. ``extra_env``
    points the functions at local stand-ins (Drive, Notion); ``bundles`` serves functions
    from their deployment bundles (the bundle test)."""
    from colony.local.tokens import mint_local_token

    logs = settings.data_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    say(f"starting {len(FUNCTIONS)} functions, one functions-framework server each (logs: {logs})…")
    started = time.perf_counter()
    env = {**function_env(settings, app_dsn), **(extra_env or {})}
    with FunctionServers(env, log_dir=logs, bundles=bundles) as servers:
        say(f"  ready in {time.perf_counter() - started:.1f}s")
        token = mint_local_token(settings.data_dir, org_id)
        update_stack(settings, functions=servers.urls, demo_jwt=token)
        yield servers, token


def run_demo_campaign(demo: DemoContext) -> None:
    from colony.adapters.transport_local import LocalTransport
    from colony.testing.inline import local_deps

    settings, db, knowledge, org_id = demo.settings, demo.db, demo.knowledge, demo.org_id
    servers, token, say = demo.servers, demo.token, demo.say

    transport = LocalTransport(servers.urls)
    deps = local_deps(settings, db, transport, llm_from_settings(settings, db), knowledge)
    try:
        with db.transaction(org_id) as cur:
            ids = [r["id"] for r in fetch_all(cur, "SELECT id FROM contacts ORDER BY external_id")]
            before = _llm_calls(cur)
        campaign_id = campaign.create_campaign(
            deps,
            org_id,
            name="Demo: Signal outreach, T1",
            angle="Signal",
            tier="T1",
            contact_ids=ids,
        )
        run_id = campaign.launch(deps, org_id, campaign_id)
        say(f"campaign {campaign_id} launched as run {run_id} over {len(ids)} prospects…")
        started = time.perf_counter()
        run = wait_for_run(db, org_id, run_id, len(ids), timeout=600, alive=servers.check)
        elapsed = time.perf_counter() - started
    finally:
        transport.close()
    with db.transaction(org_id) as cur:
        calls = {k: n for k, v in _llm_calls(cur).items() if (n := v - before.get(k, 0))}
        anti = fetch_one(
            cur,
            "SELECT count(*) AS n FROM run_steps WHERE run_id = %s AND"
            " output->>'outcome' = 'anti_icp'",
            (run_id,),
        )
        queue = fetch_all(
            cur,
            "SELECT a.id, a.subject_id AS contact_id, a.payload, c.name, c.company"
            " FROM approval_items a"
            " JOIN contacts c ON c.id = a.subject_id WHERE a.run_id = %s"
            " ORDER BY c.external_id",
            (run_id,),
        )
    done = f"{run['contacts_done']}/{run['contacts_total']}"
    say(
        f"  run {run['status']} in {elapsed:.1f}s: {done} contacts;"
        f" anti-ICP (no LLM call): {anti['n'] if anti else 0}; LLM calls: "
        + ", ".join(f"{k}={v}" for k, v in sorted(calls.items()))
    )
    say(f"approval queue ({len(queue)} outbound drafts awaiting a human, CONST-001):")
    for item in queue:
        p = item["payload"]
        say(f"  • {item['name']} ({item['company']}) — “{p['subject']}”")
        say(f"      {' '.join(p['body'].split())[:150]}…")
        say(f"      signal: {p['signal_referenced'][:100]}")
    if queue:
        response = httpx.post(
            servers.urls["approval"],
            json={"item_id": queue[0]["id"], "action": "approve"},
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )
        say(
            f"approved the first draft over HTTP (approval function): {response.status_code}"
            f" {response.json()}"
        )
        if demo.mail is not None:
            _show_sent(demo.mail, say)
        with db.transaction(org_id) as cur:
            outbox = fetch_all(cur, "SELECT subject, status FROM outbox ORDER BY created_at")
        say(
            f"  outbox now holds {len(outbox)} message(s): "
            + "; ".join(f"{o['status']}: {o['subject']}" for o in outbox[-3:])
        )
        run_outbound_demo(demo, campaign_id, queue)


def _show_sent(mail: SmtpServer, say: Callable[[str], None], timeout: float = 30.0) -> None:
    """What the local SMTP server received once the send function has sent the approval."""
    deadline = time.monotonic() + timeout
    while not mail.received and time.monotonic() < deadline:
        time.sleep(0.2)  # polling for display, bounded by the deadline
    if not mail.received:
        say("  (the send function has not delivered it to the local SMTP server yet)")
        return
    got = mail.received[-1]
    say(f"  the send function sent it; the SMTP server received, for {', '.join(got.rcpt_tos)}:")
    for name in ("Message-ID", "From", "To", "Subject", "List-Unsubscribe-Post"):
        say(f"      {name}: {got.message[name]}")
    say(f"      List-Unsubscribe: {str(got.message['List-Unsubscribe'])[:90]}…")


def _llm_calls(cur: Any) -> dict[str, int]:
    rows = fetch_all(cur, "SELECT agent_id, count(*) AS n FROM llm_calls GROUP BY agent_id")
    return {r["agent_id"]: int(r["n"]) for r in rows}
