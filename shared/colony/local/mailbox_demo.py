"""``make run``'s sequence from two mailboxes (issue 39 item 5): the demo org sends a
three-step sequence (an email, a LinkedIn task for a person, a follow-up email threaded
under the first) from two mailboxes of its own, every step through the served functions:

    admin API: add the sending domain ─► 422 with the TXT records to publish ─► published on
        the DNS stand-in ─► added again: verified (SPF, our DKIM key, DMARC)
    admin API: a ``provider`` mailbox (our relay, DKIM-signed with the domain's key) and a
        ``gmail`` mailbox connected through the real connect / Google consent / callback
    a campaign over two prospects ─► step 1 approved by a person (approval API) ─► sent,
        one contact from each mailbox (rotation)
    step 2 due ─► AGT-005 drafts a LinkedIn task ─► a person marks it done; nothing emailed
    step 3 due ─► AGT-005 drafts the follow-up ─► approved ─► sent from the same mailbox,
        ``In-Reply-To`` the first message

The local SMTP server verifies each message's DKIM signature against the DNS stand-in
(dkimpy), as a receiving server does: ours for the provider mailbox, the one the Gmail
stand-in signs with for the Gmail mailbox (the key the org's admin set up in Google Admin,
published under ``google._domainkey``). A sequence task is delivered when the scene asks for
it (``sequences.due``, as Cloud Tasks delivers it once its delay has passed), so the days
between steps take no time here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx

from colony.adapters.dkim import signed
from colony.adapters.dns import DnsPythonResolver
from colony.errors import ConfigError
from colony.local.demo_context import DemoContext, wait_for_run
from colony.local.progress import wait_until
from colony.ports import DkimKey
from colony.runtime.dkim_keys import new_key
from colony.store import fetch_all
from colony.store.outbound import suppressions
from colony.testing.dns_server import DnsServer, publish
from colony.testing.gmail_server import GmailServer
from colony.testing.mail_accounts import redirect_code
from colony.testing.smtp_server import Received, SmtpServer

DOMAIN = "zoomprop.example"
SPF_INCLUDE = "_spf.relay.colony.localhost"
REDIRECT = "http://127.0.0.1/overview/mailboxes/callback"  # our page; the demo posts for it
MAILBOXES = (
    {"address": f"outreach@{DOMAIN}", "display_name": "ZoomProp Outreach", "kind": "provider"},
    {"address": f"maya@{DOMAIN}", "display_name": "Maya Chen", "kind": "gmail"},
)
ANGLE, TIER = "Insight", "T1"  # the demo library's three-step sequence (email, LinkedIn, email)
WAIT = 120.0
RETRY_AFTER = 15.0  # seconds before a send task the local transport dropped is handed on again
CONTACTS = """
SELECT DISTINCT c.id, c.external_id, c.name, c.email FROM contacts c
JOIN approval_items a ON a.subject_id = c.id AND a.kind = 'outbound_message'
WHERE a.status = 'pending' AND c.icp_tier = %s AND c.email IS NOT NULL
ORDER BY c.external_id
"""
QUEUED = """
SELECT DISTINCT subject_id AS id FROM approval_items
WHERE payload->>'campaign_id' = %s AND (payload->>'sequence_step')::int = 1
"""
STEPS = """
SELECT a.id, a.kind, a.status, a.subject_id AS contact_id, a.decided_by,
       (a.payload->>'sequence_step')::int AS step, a.payload->>'channel' AS channel,
       a.payload->>'body' AS body
FROM approval_items a WHERE a.payload->>'campaign_id' = %s ORDER BY step, a.subject_id
"""
SENT = """
SELECT o.id AS outbox_id, o.contact_id, o.sequence_step AS step, o.message_id, o.status,
       m.address AS mailbox
FROM outbox o LEFT JOIN sender_mailboxes m ON m.id = o.mailbox_id
WHERE o.campaign_id = %s ORDER BY o.sequence_step, o.contact_id
"""

WHERE = """
SELECT status, wait_reason, send_error, bounce_label FROM outbox
WHERE campaign_id = %s AND sequence_step = %s
"""


@dataclass
class DemoMail:
    """The mail side of the local stack: the DNS stand-in, the SMTP server that verifies
    DKIM against it, and the Gmail stand-in relaying into it, signing with Google's key."""

    dns: DnsServer
    smtp: SmtpServer
    gmail: GmailServer
    google_key: DkimKey = field(repr=False)

    def env(self) -> dict[str, str]:
        """What points the functions at them."""
        return {
            **self.smtp.env(),  # the From of an org with no mailbox (Harbor's)
            **self.gmail.env(),
            "COLONY_DNS_RESOLVER": self.dns.address,
            "COLONY_SPF_INCLUDE": SPF_INCLUDE,
            "COLONY_MAILBOX_REDIRECT_URI": REDIRECT,
        }


@contextmanager
def demo_mail(say: Callable[[str], None]) -> Iterator[DemoMail]:
    """DNS, SMTP and Gmail stand-ins for the demo's mail (``mail.env()`` for the functions)."""
    key = new_key()
    google = DkimKey(DOMAIN, "google", key.private_pem)
    with DnsServer() as dns:
        # Google Workspace's DKIM record, as the org's admin publishes it from Google Admin
        dns.txt(f"google._domainkey.{DOMAIN}", f"v=DKIM1; k=rsa; p={key.public_key}")
        checker = DnsPythonResolver((dns.host, dns.port), timeout=2.0)
        with SmtpServer(dkim_dns=checker.txt) as smtp:

            def as_google(mailbox: str, raw: bytes) -> bytes:
                return signed(raw, google) if mailbox.endswith("@" + DOMAIN) else raw

            with GmailServer(relay=(smtp.host, smtp.port), sign=as_google) as gmail:
                gmail.accounts.host(*(m["address"] for m in MAILBOXES if m["kind"] == "gmail"))
                say(
                    f"local SMTP server on {smtp.host}:{smtp.port} (verifies DKIM), DNS"
                    f" stand-in on {dns.address}, Gmail stand-in on {gmail.base_url}"
                )
                yield DemoMail(dns, smtp, gmail, google)


@dataclass(frozen=True)
class TwoMailboxes:
    """What the scene did, as the servers saw it (the test checks it)."""

    campaign_id: str
    from_mailbox: dict[str, str]  # contact id -> the mailbox its messages went from
    threaded: int  # follow-ups whose In-Reply-To is their first message's Message-ID
    tasks_done: int  # LinkedIn tasks a person marked done
    tasks_emailed: int  # LinkedIn talking points found in any mail received
    dkim_pass: int
    messages: int


def connect_mailboxes(demo: DemoContext, mail: DemoMail) -> dict[str, str]:
    """Before the campaigns (as HubSpot is connected first): the org's admin verifies the
    domain and adds the two mailboxes, the Gmail one connected to this run's stand-in (a
    second ``make run`` connects it again: the stand-in's grants died with the last one), so
    every message ``make run`` sends for the demo org goes from one of them. Their ids."""
    from colony.local.tokens import mint_local_token

    started = time.perf_counter()
    demo.say("the demo org's sending domain and mailboxes, through the admin API…")
    org = demo.org_id
    admin_token = mint_local_token(demo.settings.data_dir, org, "local-admin", org_claim="v2")
    with httpx.Client(timeout=30, headers={"Authorization": f"Bearer {admin_token}"}) as http:
        base = f"{demo.servers.urls['admin']}/orgs/{org}"
        _verify_domain(http, base, mail, demo.say)
        boxes = _mailboxes(http, base, mail, demo.say)
    demo.say(f"  ready in {time.perf_counter() - started:.1f}s")
    return boxes


def run_mailbox_demo(
    demo: DemoContext, mail: DemoMail, boxes: dict[str, str]
) -> TwoMailboxes | None:
    from colony.adapters.transport_local import LocalTransport
    from colony.flows.campaigns import campaign
    from colony.testing.inline import local_deps

    say, org, urls = demo.say, demo.org_id, demo.servers.urls
    with demo.db.transaction(org) as cur:  # two that can still be written to
        rows = fetch_all(cur, CONTACTS, (TIER,))
        contacts = [c for c in rows if suppressions.reason_for(cur, c["email"]) is None][:2]
    if len(contacts) < 2:
        say("two mailboxes: fewer than two T1 prospects left to write to; scene skipped")
        return None
    say(f"a three-step sequence ({ANGLE} {TIER}) from the two mailboxes…")
    started = time.perf_counter()
    transport = LocalTransport(urls)
    deps = local_deps(demo.settings, demo.db, transport)
    try:
        ids = [str(c["id"]) for c in contacts]
        campaign_id = campaign.create_campaign(
            deps, org, name="Demo: two mailboxes", angle=ANGLE, tier=TIER, contact_ids=ids
        )
        run_id = campaign.launch(deps, org, campaign_id)
        wait_for_run(demo.db, org, run_id, len(ids), timeout=WAIT, alive=demo.servers.check)
        with demo.db.transaction(org) as cur:  # AGT-005 wrote to (AGT-004 may hold one back)
            ids = [str(r["id"]) for r in fetch_all(cur, QUEUED, (campaign_id,))]
        names = {str(c["id"]): c["name"] for c in contacts}
        for step in (1, 2, 3):
            if step > 1:
                _due(deps, transport, org, campaign_id, ids, step)
            for item in _waiting(demo, campaign_id, step, len(ids)):
                _decide(demo, item)  # a person: approves an email, marks a task done
            if step != 2:
                _arrived(demo, deps, mail, campaign_id, step, len(ids))
    finally:
        transport.close()
    return _report(demo, mail, campaign_id, names, boxes, time.perf_counter() - started)


def _verify_domain(http: httpx.Client, base: str, mail: DemoMail, say: Any) -> None:
    added = http.post(f"{base}/sending-domains", json={"domain": DOMAIN})
    if added.status_code == 422:  # what to publish (a second run: the same key, new DNS)
        records = added.json()["error"]["domain"]["publish"]
        publish(mail.dns, records)
        say(f"  {DOMAIN}: refused until published; published {len(records)} TXT records")
        added = http.post(f"{base}/sending-domains", json={"domain": DOMAIN})
    if added.status_code not in (200, 201):
        raise ConfigError(f"adding {DOMAIN}: {added.status_code} {added.text[:300]}")
    say(f"  {DOMAIN}: {added.json()['status']} (SPF, DKIM selector, DMARC checked in DNS)")


def _mailboxes(http: httpx.Client, base: str, mail: DemoMail, say: Any) -> dict[str, str]:
    """The two mailboxes, added once; the Gmail one connected (each run: a new stand-in)."""
    have = {m["address"]: m for m in http.get(f"{base}/mailboxes").json()["mailboxes"]}
    ids = {}
    for box in MAILBOXES:
        row = have.get(box["address"])
        if row is None:
            answer = http.post(f"{base}/mailboxes", json={**box, "daily_limit": 40})
            if answer.status_code != 201:
                raise ConfigError(f"adding {box['address']}: {answer.status_code} {answer.text}")
            row = answer.json()
        ids[row["id"]] = box["address"]
        if box["kind"] == "gmail":
            started = http.post(f"{base}/mailboxes/{row['id']}/connect", json={})
            consent = httpx.get(started.json()["authorize_url"], timeout=30)
            code, state = redirect_code(consent.headers["location"])
            done = http.post(
                f"{base}/mailboxes/{row['id']}/callback", json={"code": code, "state": state}
            )
            if done.status_code != 200:
                raise ConfigError(f"connecting {box['address']}: {done.status_code} {done.text}")
            say(f"  {box['address']} (gmail): connected through Google's consent and callback")
        else:
            say(f"  {box['address']} (provider): DKIM-signed with {DOMAIN}'s key")
    return ids


def _due(deps: Any, transport: Any, org: str, campaign_id: str, ids: list[str], step: int) -> None:
    """Each contact's step ``step`` delivered now, as Cloud Tasks would once its delay passed."""
    from colony.contracts.events import SequenceStep
    from colony.flows.outbound import sequences

    for contact in ids:
        task = SequenceStep(org_id=org, campaign_id=campaign_id, contact_id=contact, step=step)
        sequences.due(deps, task)
    transport.drain(WAIT)


def _steps(demo: DemoContext, campaign_id: str) -> list[dict[str, Any]]:
    with demo.db.transaction(demo.org_id) as cur:
        return fetch_all(cur, STEPS, (campaign_id,))


def _waiting(demo: DemoContext, campaign_id: str, step: int, n: int) -> list[dict[str, Any]]:
    def drafted() -> list[dict[str, Any]] | None:
        rows = [r for r in _steps(demo, campaign_id) if r["step"] == step]
        return rows if len(rows) >= n else None

    rows = wait_until(f"step {step}'s drafts", drafted, WAIT, alive=demo.servers.check)
    return [r for r in rows if r["status"] == "pending"]


def _decide(demo: DemoContext, item: dict[str, Any]) -> None:
    response = httpx.post(
        demo.servers.urls["approval"],
        json={"item_id": str(item["id"]), "action": "approve"},
        headers={"Authorization": f"Bearer {demo.token}"},
        timeout=30,
    )
    if response.status_code != 200:
        raise ConfigError(f"approving step {item['step']}: {response.status_code}")


def _arrived(
    demo: DemoContext, deps: Any, mail: DemoMail, campaign_id: str, step: int, n: int
) -> None:
    """Wait for step ``step``'s mail at the SMTP server. A send task the local transport gave
    up on (it can reach the send function before the approval's transaction commits; its
    retries are over in a second, where Cloud Tasks' back-off takes minutes) is handed to
    the send queue again, said aloud, as Cloud Tasks would retry it."""
    from colony.flows.outbound.send_queue import schedule_send

    def rows() -> list[dict[str, Any]]:
        with demo.db.transaction(demo.org_id) as cur:
            return [r for r in fetch_all(cur, SENT, (campaign_id,)) if r["step"] == step]

    def received() -> bool | None:
        ids = {r["message_id"] for r in rows() if r["status"] == "sent"}
        got = {str(m.message["Message-ID"]) for m in mail.smtp.received}
        return True if len(ids) >= n and ids <= got else None

    try:
        wait_until(f"step {step}'s mail", received, RETRY_AFTER, alive=demo.servers.check)
        return
    except ConfigError:
        queued = [r for r in rows() if r["status"] == "queued"]
    for row in queued:
        schedule_send(deps, demo.org_id, str(row["outbox_id"]), attempt="demo-retry")
    demo.say(f"  ({len(queued)} step-{step} send task(s) handed to the send queue again)")
    try:
        wait_until(f"step {step}'s mail", received, WAIT, alive=demo.servers.check)
    except ConfigError as late:  # say where each message stands, not only that it is late
        with demo.db.transaction(demo.org_id) as cur:
            where = fetch_all(cur, WHERE, (campaign_id, step))
        raise ConfigError(f"{late}: {where}") from None


def _report(
    demo: DemoContext,
    mail: DemoMail,
    campaign_id: str,
    names: dict[str, str],
    boxes: dict[str, str],
    elapsed: float,
) -> TwoMailboxes:
    with demo.db.transaction(demo.org_id) as cur:
        sent = fetch_all(cur, SENT, (campaign_id,))
    by_id: dict[str, Received] = {str(m.message["Message-ID"]): m for m in mail.smtp.received}
    mine = [by_id[r["message_id"]] for r in sent if r["message_id"] in by_id]
    firsts = {str(r["contact_id"]): r for r in sent if r["step"] == 1}
    from_mailbox: dict[str, str] = {}
    threaded = 0
    for r in sent:
        contact = str(r["contact_id"])
        from_mailbox.setdefault(contact, r["mailbox"])
        got = by_id.get(r["message_id"])
        if r["step"] > 1 and got is not None:
            first = firsts[contact]["message_id"]
            threaded += int(str(got.message["In-Reply-To"]) == first)
            demo.say(
                f"  {names[contact]}: step 1 and step {r['step']} from {r['mailbox']};"
                f" In-Reply-To {got.message['In-Reply-To']} = its first Message-ID:"
                f" {str(got.message['In-Reply-To']) == first}"
            )
    tasks = [s for s in _steps(demo, campaign_id) if s["channel"] in ("linkedin", "call")]
    done = [t for t in tasks if t["status"] == "applied" and t["decided_by"]]
    emailed = sum(1 for t in tasks for m in mail.smtp.received if t["body"] in m.raw.decode())
    passed = sum(1 for m in mine if m.dkim)
    demo.say(
        f"  LinkedIn tasks: {len(done)} of {len(tasks)} marked done by a person"
        f" ({', '.join(sorted({str(t['decided_by']) for t in done}))}), {emailed} emailed;"
        f" DKIM verified at the SMTP server: {passed} of {len(mine)} messages"
        f" (mailboxes: {', '.join(sorted(boxes.values()))}) in {elapsed:.1f}s"
    )
    return TwoMailboxes(campaign_id, from_mailbox, threaded, len(done), emailed, passed, len(mine))
