"""The ``make run`` scene after the first approval (issue 18): the approved message's
sequence waits for its next step; one prospect replies (the sequence stops), another
unsubscribes with one click (a re-launch skips them before any work)."""

from __future__ import annotations

import time
from typing import Any

import httpx

from colony.flows.campaigns import campaign
from colony.flows.outbound import replies
from colony.local.demo_context import DemoContext, wait_for_run
from colony.ports import InboundMail
from colony.store import fetch_one
from colony.store.outbound import sequences
from colony.testing.smtp_server import SmtpServer

REPLY = (
    "Yes, this is timely. Can you send two times that work next week?\n\n"
    "On Mon, ZoomProp <outreach@zoomprop.example> wrote:\n> {quoted}\n"
)


def run_outbound_demo(demo: DemoContext, campaign_id: str, queue: list[dict[str, Any]]) -> None:
    mail = demo.mail
    if mail is None or len(queue) < 2 or not mail.received:
        return
    from colony.adapters.transport_local import LocalTransport
    from colony.testing.inline import local_deps

    say, org = demo.say, demo.org_id
    transport = LocalTransport(demo.servers.urls)
    deps = local_deps(demo.settings, demo.db, transport)
    try:
        first, second = queue[0], queue[1]
        _show_sequence(demo, campaign_id, first)
        sent = mail.received[-1]
        reply = InboundMail(
            message_id=f"<reply-{first['id'][:8]}@prospect.example>",
            sender=sent.rcpt_tos[0],
            subject=f"Re: {sent.message['Subject']}",
            text=REPLY.format(quoted=first["payload"]["subject"]),
            in_reply_to=str(sent.message["Message-ID"]),
        )
        # As the org's reply mailbox poll would hand it over (colony.flows.outbound.replies.poll).
        got = replies.ingest(deps, reply, event_id="demo-reply", org_id=org)
        say(
            f"{first['name']} replied ({got['sentiment']}); stored as data with the quoted"
            f" history stripped; {_sequence_state(demo, campaign_id, first)}"
        )
        before = len(mail.received)
        response = httpx.post(
            demo.servers.urls["approval"],
            json={"item_id": second["id"], "action": "approve"},
            headers={"Authorization": f"Bearer {demo.token}"},
            timeout=30,
        )
        say(f"approved the second draft ({second['name']}): {response.status_code}")
        message = _next_mail(mail, after=before)
        if message is None:
            say("  (the send function has not delivered it to the local SMTP server yet)")
            return
        link = str(message.message["List-Unsubscribe"]).strip("<>")
        click = httpx.post(link, data={"List-Unsubscribe": "One-Click"}, timeout=30)
        say(
            f"{second['name']} used the one-click unsubscribe (RFC 8058, delivery-events):"
            f" {click.status_code}; {_sequence_state(demo, campaign_id, second)}"
        )
        wave = campaign.create_campaign(
            deps,
            org,
            name="Demo: second wave",
            angle="Signal",
            tier="T1",
            contact_ids=[second["contact_id"]],
        )
        run_id = campaign.launch(deps, org, wave)
        run = wait_for_run(demo.db, org, run_id, 1, timeout=120, alive=demo.servers.check)
        with demo.db.transaction(org) as cur:
            skipped = fetch_one(
                cur,
                "SELECT count(*) AS n FROM run_steps WHERE run_id = %s"
                " AND output->>'outcome' = 'suppressed'",
                (run_id,),
            )
        say(
            f"a new campaign over {second['name']}: run {run['status']},"
            f" {skipped['n'] if skipped else 0} contact skipped before any work (suppressed)"
        )
    finally:
        transport.close()


def _enrollment(demo: DemoContext, campaign_id: str, item: dict[str, Any]) -> Any:
    with demo.db.transaction(demo.org_id) as cur:
        return sequences.get(cur, campaign_id, item["contact_id"])


def _show_sequence(demo: DemoContext, campaign_id: str, item: dict[str, Any]) -> None:
    row = _enrollment(demo, campaign_id, item)
    if row is None or row["next_due_at"] is None:
        return
    demo.say(
        f"  sequence: step {row['step']} of {row['steps']} sent; step {row['step'] + 1} is due"
        f" {row['next_due_at']:%a %d %b %H:%M} UTC (a colony-sequence task for campaign-resume)"
    )


def _sequence_state(demo: DemoContext, campaign_id: str, item: dict[str, Any]) -> str:
    row = _enrollment(demo, campaign_id, item)
    if row is None:
        return "no sequence"
    return f"sequence {row['status']}" + (f": {row['stop_reason']}" if row["stop_reason"] else "")


def _next_mail(mail: SmtpServer, *, after: int, timeout: float = 30.0) -> Any:
    """The message the SMTP server receives after the first ``after`` (None: none came)."""
    deadline = time.monotonic() + timeout
    while len(mail.received) <= after and time.monotonic() < deadline:
        time.sleep(0.2)  # waiting for the send function, for display, bounded by the deadline
    return mail.received[after] if len(mail.received) > after else None
