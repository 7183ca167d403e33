"""Outbound benchmark: N contacts on a 3-step sequence through the real send path, one JSON line.

A scratch database of the embedded PostgreSQL gets the demo org, a three-step Signal × T1
sequence library and the org settings ``sequence_approval='once'`` (one person's approval of
step 1 covers the later steps) with caps high enough not to defer. ``--contacts`` synthetic
contacts are cloned from the demo contacts a pilot run drafts for (so every clone reaches
step 1), each with its own address; 1% of the addresses have a mailbox the local SMTP server
refuses for good (``bounce-…``: a 550 at RCPT, the real hard-bounce path of the send step).

The campaign runs through AGT-002..AGT-005 (inline transport, offline model); a person
approves every step-1 draft. Then, per step, every send task on the send queue is delivered
``--deliveries`` times (3 at once, from worker threads, as duplicate Cloud Tasks deliveries
would race; a delivery that finds another one sending is redelivered later, as Cloud Tasks
retries a 409) to ``flows.outbound.sending.send``, which sends through the real SMTP adapter to a
real SMTP server (aiosmtpd). After step 1, 10% of the contacts reply (a ``replied``
delivery event) and 2% unsubscribe through the signed ``List-Unsubscribe`` link of the mail
they received; then each sequence task (``campaign-resume``) is delivered, also
``--deliveries`` times, AGT-005 drafts the next step and the covering approval queues it.

Reported, from what the SMTP server received: ``received`` and ``expected`` (3 per contact
that neither bounced, replied nor unsubscribed; 1 for those that replied or unsubscribed;
0 for a bounce), ``duplicates`` (a Message-ID received twice), ``to_suppressed`` (messages
received after their address was suppressed or their contact's sequence stopped),
``invalid_headers`` (a message whose ``List-Unsubscribe`` is not a link that verifies for
its recipient, whose ``List-Unsubscribe-Post`` is not RFC 8058's, or whose footer lacks the
link or the org's postal address), ``messages_per_s`` (messages received / wall seconds of
the send phases: send step, SMTP exchange, commit; drafting is ``drafting_s``) and ``lost``
(a message left queued or sending). ``ok``: every target met (received = expected, nothing
duplicated, lost or sent to a suppressed address, no invalid header, the later phases' own).
Below 20 contacts the one hard bounce trips the campaign's 5% breaker, rightly. Then the
deliverability phase (``outbound_deliverability.py``) and the mailbox phase
(``outbound_mailboxes.py``: 3 orgs x 4 mailboxes; its targets also at the top).

    python bench/outbound.py [--contacts 1000] [--deliveries 3]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import parse_qs, urlparse

import outbound_mailboxes
from outbound_deliverability import measure as deliverability  # beside this file
from outbound_deliverability import valid_headers

from colony.adapters.embedding import OfflineHashEmbedder
from colony.adapters.smtp import SmtpSender
from colony.contracts.events import SequenceStep
from colony.contracts.tasks import SendMessage
from colony.flows.approvals import approval
from colony.flows.campaigns import campaign
from colony.flows.outbound import delivery, sending, sequences
from colony.knowledge import KnowledgeStore
from colony.llm.agent_call import llm_from_settings
from colony.local import embedded
from colony.local.demo import load_demo
from colony.registry.functions import SEND_QUEUE, SEQUENCE_QUEUE
from colony.runtime.deps import Deps
from colony.settings import Settings
from colony.store import Database, connect_factory, fetch_all
from colony.testing.inline import FIXED_NOW, InlineTransport, local_deps, run_until_idle
from colony.testing.smtp_server import SmtpServer

ORG = "org_zoomprop_demo"
PERSON = approval.Actor("bench_user", "ui")
STEPS = ((1, 0), (2, 3), (3, 5))  # (step, delay in days)
DOMAINS = 40  # recipient domains the synthetic addresses spread over
MAIL = {
    "COLONY_MAIL_FROM": "ZoomProp <outreach@zoomprop.example>",
    "COLONY_UNSUBSCRIBE_URL": "https://colony.example/unsubscribe",
    "COLONY_UNSUBSCRIBE_TOKEN_KEY": "bench-unsubscribe-key-" + "b" * 24,
}
LIBRARY = (
    "INSERT INTO sequences (org_id, angle, tier, step, delay_days, guidance)"
    " VALUES (%s, 'Signal', 'T1', %s, %s, 'one new detail each time')"
)
SETTINGS = """
INSERT INTO org_settings (org_id, sequence_approval, daily_send_cap, per_domain_hourly_cap)
VALUES (%s, 'once', 100000, 100000)
ON CONFLICT (org_id) DO UPDATE SET sequence_approval = 'once', daily_send_cap = 100000,
    per_domain_hourly_cap = 100000
"""
CLONE = """
INSERT INTO contacts (org_id, external_id, name, title, email, company, company_domain,
                      enrichment, raw_enrichment_html, signals)
SELECT org_id, %s, name, title, %s, company || %s, company_domain, enrichment,
       raw_enrichment_html, signals
FROM contacts WHERE id = %s RETURNING id
"""
PENDING = """
SELECT a.id, a.subject_id AS contact, a.payload ? 'untrusted_instructions' AS flagged
FROM approval_items a JOIN contacts c ON c.id = a.subject_id
WHERE a.status = 'pending' AND a.payload->>'campaign_id' = %s
  AND (a.payload->>'sequence_step')::int = 1
ORDER BY c.external_id
"""
STEP_ONE = """
SELECT id, contact_id FROM outbox WHERE campaign_id = %s AND sequence_step = 1
  AND status = 'sent'
"""

OUTBOX_STATES = """
SELECT sequence_step, status, count(*) AS n FROM outbox WHERE campaign_id = %s
GROUP BY 1, 2 ORDER BY 1, 2
"""
WAITING = """
SELECT (payload->>'sequence_step')::int AS step, payload ? 'untrusted_instructions' AS flagged,
       count(*) AS n
FROM approval_items WHERE status = 'pending' AND payload->>'campaign_id' = %s GROUP BY 1, 2
"""


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def bench_deps(settings: Settings, db: Database, smtp: SmtpServer) -> Deps:
    """The flows' deps for the benchmark: the offline model, the inline transport and the real
    SMTP adapter pointed at ``smtp``."""
    settings = dataclasses.replace(
        settings,
        mail_from=MAIL["COLONY_MAIL_FROM"],
        unsubscribe_url=MAIL["COLONY_UNSUBSCRIBE_URL"],
        unsubscribe_token_key=MAIL["COLONY_UNSUBSCRIBE_TOKEN_KEY"],
    )
    knowledge = KnowledgeStore(db, OfflineHashEmbedder())
    sender = SmtpSender(smtp.host, smtp.port, starttls=False, timeout=20)
    llm = llm_from_settings(settings, db)
    return local_deps(settings, db, InlineTransport(), llm, knowledge, sender=sender)


def _inline(deps: Deps) -> InlineTransport:
    transport = deps.transport
    assert isinstance(transport, InlineTransport)
    return transport


def _drain(deps: Deps) -> None:
    stats = run_until_idle(deps, _inline(deps))
    if stats.rejected or stats.dead_letters:
        raise SystemExit(f"deliveries failed: {stats.rejected[:3]} {len(stats.dead_letters)}")


def _take(deps: Deps, queue: str) -> list[bytes]:
    """Every task scheduled on ``queue`` (taken off it, as Cloud Tasks delivers them once due)."""
    transport = _inline(deps)
    names = [n for n, t in transport.tasks.items() if t.queue == queue]
    return [transport.tasks.pop(n).body for n in names]


def _setup(deps: Deps, contacts: int, say: Callable[[str], None]) -> list[tuple[str, str]]:
    """The library, the org settings, and ``contacts`` clones of the demo contacts that a pilot
    run drafts step 1 for; their ids and addresses (``bounce-…`` for every hundredth)."""
    with deps.db.transaction(ORG) as cur:
        cur.execute("DELETE FROM sequences WHERE angle = 'Signal' AND tier = 'T1'")
        for step, delay in STEPS:
            cur.execute(LIBRARY, (ORG, step, delay))
        cur.execute(SETTINGS, (ORG,))
        demo = [r["id"] for r in fetch_all(cur, "SELECT id FROM contacts ORDER BY external_id")]
    pilot = campaign.create_campaign(
        deps, ORG, name="bench pilot", angle="Signal", tier="T1", contact_ids=demo
    )
    campaign.launch(deps, ORG, pilot)
    _drain(deps)
    with deps.db.transaction(ORG) as cur:  # the pilot's drafts stay pending: never sent
        drafts = fetch_all(cur, PENDING, (pilot,))
    # A draft flagged for untrusted instructions in the contact's data (the demo plants some)
    # waits for a person at every step, by design: the clones are of the unflagged ones, so
    # one approval of step 1 covers each clone's sequence.
    sources = [r["contact"] for r in drafts if not r["flagged"]]
    say(
        f"pilot: {len(drafts)} of {len(demo)} demo contacts reach step 1, {len(sources)}"
        f" unflagged; cloning {contacts}"
    )
    bounces = _every(contacts, 100)
    ids = []
    with deps.db.transaction(ORG) as cur:
        for i in range(contacts):
            mailbox = f"bounce-{i:05d}" if i in bounces else f"p{i:05d}"
            address = f"{mailbox}@d{i % DOMAINS}.bench.example"
            row = fetch_all(
                cur, CLONE, (f"B-{i:05d}", address, f" #{i}", sources[i % len(sources)])
            )
            ids.append((str(row[0]["id"]), address))
    return ids


def _every(n: int, per: int, offset: int = 0) -> set[int]:
    """Indexes of 1 in ``per`` of ``n`` (at least one), starting at ``offset``."""
    count = max(1, n // per)
    return {(offset + k * per) % n for k in range(count)}


def _deliver_sends(deps: Deps, deliveries: int, pool: ThreadPoolExecutor) -> Counter[str]:
    """Deliver every send task ``deliveries`` times, concurrently; a delivery that finds another
    sending (409) is redelivered once the others have answered, as Cloud Tasks retries it."""
    outcomes: Counter[str] = Counter()
    bodies = _take(deps, SEND_QUEUE)
    due = [SendMessage.model_validate_json(b).outbox_id for b in bodies for _ in range(deliveries)]
    while due:

        def one(outbox_id: str) -> tuple[str, str]:
            try:
                result = sending.send(deps, ORG, outbox_id)
            except sending.SendInProgress:
                return outbox_id, "in_progress"
            return outbox_id, "duplicate" if result.get("duplicate") else result["status"]

        retry = []
        for outbox_id, outcome in pool.map(one, due):
            outcomes[outcome] += 1
            if outcome == "in_progress":
                retry.append(outbox_id)
        due = retry
    _drain(deps)
    return outcomes


def _deliver_steps(deps: Deps, deliveries: int) -> Counter[str]:
    """Deliver every sequence task ``deliveries`` times to ``campaign-resume`` and what it
    hands AGT-005 (which drafts, and the covering approval queues the send)."""
    outcomes: Counter[str] = Counter()
    for body in _take(deps, SEQUENCE_QUEUE):
        task = SequenceStep.model_validate_json(body)
        for _ in range(deliveries):
            result = sequences.due(deps, task)
            outcomes["handed" if "handed_to" in result else "skipped"] += 1
        _drain(deps)
    return outcomes


def measure(
    deps: Deps,
    smtp: SmtpServer,
    contacts: int,
    *,
    deliveries: int = 3,
    say: Callable[[str], None] = log,
) -> dict[str, Any]:
    """Run the benchmark on ``deps`` (the demo org loaded, its sender pointed at ``smtp``)."""
    cloned = _setup(deps, contacts, say)
    ids = [cid for cid, _ in cloned]
    index = {key: i for i, pair in enumerate(cloned) for key in pair}  # by id and by address
    replies, unsubscribes = _every(contacts, 10, 3), _every(contacts, 50, 5)
    bounced = _every(contacts, 100)
    assert not (replies & unsubscribes) and not (bounced & (replies | unsubscribes))

    started = time.perf_counter()
    run = campaign.create_campaign(
        deps, ORG, name="bench outbound", angle="Signal", tier="T1", contact_ids=ids
    )
    campaign.launch(deps, ORG, run)
    _drain(deps)
    with deps.db.transaction(ORG) as cur:
        items = fetch_all(cur, PENDING, (run,))
    for item in items:
        approval.decide(deps, ORG, str(item["id"]), "approve", actor=PERSON)
    drafting = time.perf_counter() - started
    say(f"step 1: {len(items)} drafts approved in {drafting:.1f}s")

    stopped_at: dict[str, int] = {}  # address -> messages received when it was stopped
    sends: Counter[str] = Counter()
    steps: Counter[str] = Counter()
    sending_s = 0.0
    with ThreadPoolExecutor(max_workers=deliveries * 2) as pool:
        for step in (1, 2, 3):
            if step > 1:
                t = time.perf_counter()
                steps += _deliver_steps(deps, deliveries)
                drafting += time.perf_counter() - t
            t = time.perf_counter()
            sends += _deliver_sends(deps, deliveries, pool)
            sending_s += time.perf_counter() - t
            say(f"step {step}: {len(smtp.received)} received so far, {dict(sends)}")
            if step == 1:
                for i in bounced:  # refused at step 1: suppressed from here on
                    stopped_at[cloned[i][1]] = len(smtp.received)
                _stop_some(deps, smtp, run, index, replies, unsubscribes, stopped_at)

    received = smtp.received
    ids_seen = Counter(r.message["Message-ID"] for r in received)
    expected = sum(
        0 if i in bounced else 1 if i in replies or i in unsubscribes else 3
        for i in range(contacts)
    )
    to_suppressed = sum(
        1
        for n, r in enumerate(received)
        for rcpt in r.rcpt_tos
        if rcpt.lower() in stopped_at and n >= stopped_at[rcpt.lower()]
    )
    with deps.db.transaction(ORG) as cur:
        suppressed = {
            r["address"]
            for r in fetch_all(cur, "SELECT lower(address) AS address FROM suppressions")
        }
        outbox_states = {
            f"{r['sequence_step']}:{r['status']}": r["n"]
            for r in fetch_all(cur, OUTBOX_STATES, (run,))
        }
        waiting = {f"{r['step']}:{r['flagged']}": r["n"] for r in fetch_all(cur, WAITING, (run,))}
    invalid = sum(1 for r in received if not valid_headers(deps, ORG, r.message, r.rcpt_tos))
    lost = sum(n for k, n in outbox_states.items() if k.split(":")[1] in ("queued", "sending"))
    figures = deliverability(deps, smtp, ORG, max(20, contacts // 10), say)
    boxes = outbound_mailboxes.measure(deps.settings, deps.db, max(40, contacts // 25), say)
    result = {
        "bench": "outbound",
        "contacts": contacts,
        "steps": len(STEPS),
        "deliveries_per_task": deliveries,
        "replied": len(replies),
        "unsubscribed": len(unsubscribes),
        "hard_bounced": len(bounced),
        "received": len(received),
        "expected": expected,
        "duplicates": (twice := sum(n - 1 for n in ids_seen.values())),
        "to_suppressed": to_suppressed,
        "suppressed_addresses": len(suppressed),
        "invalid_headers": invalid,
        "outbox": outbox_states,
        "awaiting_a_person": waiting,
        "send_deliveries": dict(sends),
        "sequence_deliveries": dict(steps),
        "sending_s": round(sending_s, 2),
        "drafting_s": round(drafting, 2),
        "messages_per_s": round(len(received) / sending_s, 1) if sending_s else None,
        "messages_per_s_measures": "SMTP messages received / wall s of the send phases",
        "deliverability": figures,
        "mailboxes": boxes,
        **{k: boxes[k] for k in outbound_mailboxes.HEADLINE},
        "lost": lost + figures["lost"] + boxes["lost"],
        "sent_twice": twice + figures["sent_twice"] + boxes["sent_twice"],
    }
    result["ok"] = (
        result["received"] == expected
        and result["duplicates"] == 0
        and to_suppressed == 0
        and invalid == 0
        and len(suppressed) == len(bounced) + len(unsubscribes)
        and result["lost"] == 0 == result["sent_twice"]
        and figures["ok"]
        and boxes["ok"]
    )
    return result


def _stop_some(
    deps: Deps,
    smtp: SmtpServer,
    run: str,
    index: dict[str, int],
    replies: set[int],
    unsubscribes: set[int],
    stopped_at: dict[str, int],
) -> None:
    """After step 1: the replies (delivery events) and the unsubscribes (the links received)."""
    with deps.db.transaction(ORG) as cur:
        sent = fetch_all(cur, STEP_ONE, (run,))
    for row in sent:
        if index[str(row["contact_id"])] in replies:
            delivery.record(deps, ORG, str(row["id"]), "replied", f"bench-reply-{row['id']}")
    for received in smtp.received:  # the link in the mail the contact received
        address = received.rcpt_tos[0].lower()
        if index[address] in unsubscribes:
            header = str(received.message["List-Unsubscribe"])
            token = parse_qs(urlparse(header.strip("<>")).query)["t"][0]
            sending.unsubscribe(deps, token, FIXED_NOW)
        if index[address] in unsubscribes | replies:  # stopped from here on
            stopped_at[address] = len(smtp.received)
    _drain(deps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contacts", type=int, default=1000)
    parser.add_argument("--deliveries", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("XDG_RUNTIME_DIR", f"/tmp/colony-runtime-{os.getuid()}")
    with embedded.scratch_database(Settings.from_env(), "bench_outbound") as settings:
        db = Database(connect_factory(settings, "app"), pool_size=8)
        load_demo(db, KnowledgeStore(db, OfflineHashEmbedder()), say=log)
        with SmtpServer() as smtp:
            result = measure(
                bench_deps(settings, db, smtp), smtp, args.contacts, deliveries=args.deliveries
            )
        db.close()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
