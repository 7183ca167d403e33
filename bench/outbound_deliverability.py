"""``bench/outbound.py``'s deliverability phase (issue 39 item 4), in a module of its own.

After the sequence phases, ``messages`` more approved one-off messages (at least 20) go to
addresses over two recipient domains whose hourly cap is lowered so that most of them must
defer, and the real SMTP server answers some of them with scripted codes per recipient, as a
real one would:

- 1 in 10 refuses for now twice (``421 4.7.0``, then ``451 4.3.0``) and then accepts: the
  message is retried with back-off and must arrive once;
- 1 in 20 keeps answering ``452 4.2.2`` (mailbox full): after five tries the address is
  suppressed (a soft bounce exhausted);
- 2 in 50 refuse for good, with ``550 5.7.1`` (policy) or ``550 5.1.1`` (bad mailbox):
  suppressed at once, never retried;
- the rest are accepted.

So few bounce that the sender's own rate stays under the breaker's 5% at every scale (the
sequence phases before it sent from the same mailbox); ``senders_paused`` says if it did not.

Every send task on the queue is delivered (twice, concurrently: duplicate deliveries), the
deferred ones included, round after round; between rounds an hour passes for the caps (the
phase's sent rows move an hour back) and the back-off's delay is taken as elapsed (Cloud
Tasks would deliver the retry then). Reported: ``bounces_classified`` (rows whose refusal
was kept as codes and a class), by class and label, ``suppressed`` (hard, soft exhausted),
``retried`` (soft bounces retried), ``soft_recovered`` (sent after a soft bounce),
``deferred_by_caps``, ``rounds``, ``lost`` (messages neither sent nor ended for a reason: 0) and
``sent_twice`` (a Message-ID the server received twice: 0).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import parse_qs, urlparse

from colony.contracts.tasks import SendMessage
from colony.errors import ColonyError
from colony.flows.approvals import approval
from colony.flows.outbound import sending
from colony.registry.functions import SEND_QUEUE
from colony.runtime.deps import Deps
from colony.store import fetch_all, fetch_one
from colony.store.approvals import approvals
from colony.store.outbound import postal_address
from colony.testing.inline import FIXED_NOW
from colony.testing.smtp_server import SmtpServer

SUBJECT = "Deliverability check"
RECOVERS = ("421 4.7.0 try again later", "451 4.3.0 greylisted")
FULL = ("452 4.2.2 mailbox full",) * 5
HARD = ("550 5.7.1 message refused by policy", "550 5.1.1 no such mailbox")
MAX_ROUNDS = 40
DOMAIN_CAP = 5  # an hour, per recipient domain: most of the phase must defer
CLONE = """
INSERT INTO contacts (org_id, external_id, name, email, company)
VALUES (%s, %s, %s, %s, 'Deliverability Co') RETURNING id
"""
OUTCOMES = """
SELECT status, bounce_class, bounce_label, soft_bounces, sent_at IS NOT NULL AS sent
FROM outbox WHERE subject = %s
"""


def _script(i: int) -> tuple[str, tuple[str, ...]]:
    if i % 10 == 1:
        return "recovers", RECOVERS
    if i % 20 == 2:
        return "full", FULL
    if i % 50 == 3:
        return "hard", HARD[:1]
    if i % 50 == 29:
        return "hard", HARD[1:]
    return "accepted", ()


def measure(
    deps: Deps, smtp: SmtpServer, org: str, messages: int, say: Callable[[str], None]
) -> dict[str, Any]:
    """Run the phase on ``deps`` (the demo org ``org``); its figures, ``ok`` among them."""
    kinds: Counter[str] = Counter()
    items = []
    with deps.db.transaction(org) as cur:
        cur.execute("UPDATE org_settings SET per_domain_hourly_cap = %s", (DOMAIN_CAP,))
        for i in range(messages):
            kind, replies = _script(i)
            kinds[kind] += 1
            address = f"dlv{i:05d}@cap{i % 2}.bench.example"
            if replies:
                smtp.answer(address, *replies)
            contact = fetch_one(cur, CLONE, (org, f"DLV-{i:05d}", f"Dee {i}", address))
            assert contact is not None
            payload = {"subject": SUBJECT, "body": "A note.", "contact_id": str(contact["id"])}
            items.append(approvals.add(cur, org, "outbound_message", "AGT-005", payload))
    for item in items:
        approval.decide(deps, org, item, "approve", actor=approval.Actor("bench_user", "ui"))
    tally: Counter[str] = Counter()
    rounds = 0
    with ThreadPoolExecutor(max_workers=4) as pool:
        # each task delivered twice, concurrently; bounded, so a message stuck in a loop
        # shows as lost instead of running forever
        while rounds < MAX_ROUNDS and (due := [_outbox_id(t) for t in _take(deps) for _ in "ab"]):
            rounds += 1
            for outcome in pool.map(lambda oid: send_once(deps, org, oid), due):
                tally[outcome] += 1
            with deps.db.transaction(org) as cur:  # an hour passes before the next round
                cur.execute(
                    "UPDATE outbox SET sent_at = sent_at - interval '61 minutes'"
                    " WHERE subject = %s AND sent_at IS NOT NULL",
                    (SUBJECT,),
                )
    say(f"deliverability: {rounds} rounds, {dict(tally)}")
    with deps.db.transaction(org) as cur:
        rows = fetch_all(cur, OUTCOMES, (SUBJECT,))
        paused = len(fetch_all(cur, "SELECT sender FROM sender_pauses WHERE status = 'paused'"))
    received = [r for r in smtp.received if r.message["Subject"] == SUBJECT]
    classified = [r for r in rows if r["bounce_class"]]
    result = {
        "messages": messages,
        "scripted": dict(kinds),
        "received": len(received),
        "bounces_classified": len(classified),
        "by_class": dict(Counter(f"{r['bounce_class']}:{r['bounce_label']}" for r in classified)),
        "suppressed_hard": sum(
            1 for r in rows if r["status"] == "bounced" and not r["soft_bounces"]
        ),
        "suppressed_soft_exhausted": sum(
            1 for r in rows if r["status"] == "bounced" and r["soft_bounces"]
        ),
        "retried": sum(int(r["soft_bounces"]) for r in rows if r["status"] == "sent"),
        "soft_recovered": sum(1 for r in rows if r["status"] == "sent" and r["soft_bounces"]),
        "deferred_by_caps": tally["deferred_cap"],
        "rounds": rounds,
        "senders_paused": paused,
        "lost": sum(1 for r in rows if r["status"] not in ("sent", "bounced")),
        "sent_twice": len(received) - len({r.message["Message-ID"] for r in received}),
    }
    result["ok"] = (
        result["lost"] == 0
        and result["sent_twice"] == 0
        and result["received"] == kinds["accepted"] + kinds["recovers"]
        and result["soft_recovered"] == kinds["recovers"]
        and result["suppressed_soft_exhausted"] == kinds["full"]
        and result["suppressed_hard"] == kinds["hard"]
        and result["deferred_by_caps"] > 0
    )
    return result


def _outbox_id(task: Any) -> str:
    return SendMessage.model_validate_json(task.body).outbox_id


def _take(deps: Deps) -> list[Any]:
    tasks = deps.transport.tasks  # type: ignore[attr-defined]  # the inline transport's
    names = [n for n, t in tasks.items() if t.queue == SEND_QUEUE]
    return [tasks.pop(n) for n in names]


def send_once(deps: Deps, org: str, outbox_id: str) -> str:
    """One delivery of a send task, as its outcome's name (``bench/outbound_mailboxes.py``
    shares it)."""
    try:
        result = sending.send(deps, org, outbox_id)
    except sending.SendInProgress:  # its twin holds it: Cloud Tasks retries it later
        return "in_progress"
    if result.get("duplicate"):
        return "duplicate"
    if result["status"] == "deferred":
        return "deferred_soft" if "bounce" in result else "deferred_cap"
    return str(result["status"])


def valid_headers(deps: Deps, org: str, message: Any, rcpts: tuple[str, ...]) -> bool:
    """Whether a received message carries RFC 8058's unsubscribe headers with a link that
    verifies for its recipient, and a footer with that link under the org's postal address."""
    header = str(message.get("List-Unsubscribe") or "")
    if message.get("List-Unsubscribe-Post") != "List-Unsubscribe=One-Click":
        return False
    if not (header.startswith("<https://") and header.endswith(">")):
        return False
    link = header[1:-1]
    try:
        token = parse_qs(urlparse(link).query)["t"][0]
        owner, address = sending.check_unsubscribe(deps, token, FIXED_NOW)
    except (KeyError, ColonyError):
        return False
    body = message.get_content() if not message.is_multipart() else ""
    with deps.db.transaction(org) as cur:
        postal = postal_address.get(cur)
    footer = f"\r\n--\r\n{postal}\r\nTo stop receiving these emails: {link}"
    return owner == org and [address.lower()] == [r.lower() for r in rcpts] and footer in body
