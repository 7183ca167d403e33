"""``bench/outbound.py``'s mailbox phase (issue 39's benchmark), in a module of its own.

Three orgs, each with a sending domain verified through the DNS stand-in (on the wire) and
four ``provider`` mailboxes on it with different daily limits and warm-up ramps, send a
four-step sequence (email, LinkedIn task, call task, follow-up email) to ``contacts`` each.
Their mailboxes' limits today add up to far fewer than the contacts, so most first emails
must wait for later days (the caps that defer). The real SMTP server verifies every DKIM
signature against the same DNS (dkimpy), refuses one address per org for good (550: a hard
bounce) and two for now once (451: a soft bounce, retried).

AGT-005's drafting is played by the bench (the sequence phases of ``bench/outbound.py``
measure it through the model path): when a sequence task is due (``sequences.due`` hands it
on) the bench advances the enrollment and queues the step's approval item as AGT-005's
applier does; a person then approves each email, marks four in five tasks done and skips
the others (approval API flow). Everything else is the real send path: the mailbox each
contact gets and keeps, the limits counted under the mailbox rows' lock, the thread
headers, DKIM signing, bounces and deferrals. Each send task is delivered twice at once; a
day passes (the clock moves) when no task can go today.

Reported: ``max_over_limit`` (the most any mailbox sent on a UTC day above its ramp's limit
that day: 0), ``threaded_share`` (follow-ups whose ``In-Reply-To`` is their contact's first
message: 1.0), ``non_email_emailed`` (task steps that reached the outbox or whose talking
points reached the SMTP server: 0), ``dkim_verified_share`` (1.0), ``lost`` and
``sent_twice`` (0), beside ``deferred_by_limit`` (deliveries a limit put off to a later day;
each task is delivered twice), the bounces and ``days``. A campaign whose
breaker trips (its one hard bounce among under 20 judged messages) holds its later mail for a
person: ``held_by_a_paused_campaign``, not lost; ``bench/outbound.py`` gives each org at least
40 contacts, so at its sizes it does not trip.
"""

from __future__ import annotations

import dataclasses
import re
import zlib
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from outbound_deliverability import send_once  # beside this file

from colony.adapters.dns import DnsPythonResolver
from colony.adapters.embedding import OfflineHashEmbedder
from colony.adapters.secrets import FileSecrets
from colony.adapters.smtp import SmtpSender
from colony.contracts.admin import SequenceLibrary
from colony.contracts.events import SequenceStep
from colony.contracts.mailboxes import MailboxAdd
from colony.contracts.tasks import SendMessage
from colony.errors import DomainUnverified
from colony.flows.approvals import approval
from colony.flows.campaigns import campaign
from colony.flows.outbound import mailboxes, sending_domains, sequences
from colony.flows.tenants import org_admin
from colony.knowledge import KnowledgeStore
from colony.policy.mailboxes import Ramp
from colony.registry.functions import SEND_QUEUE, SEQUENCE_QUEUE
from colony.settings import Settings
from colony.store import Database, fetch_all, fetch_one
from colony.store.approvals import approvals
from colony.store.outbound import postal_address
from colony.store.outbound import sequences as enrollments
from colony.testing.dns_server import DnsServer, publish
from colony.testing.inline import InlineTransport, local_deps
from colony.testing.smtp_server import SmtpServer

START = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)
PERSON = approval.Actor("bench_person", "ui")
CHANNELS = ("email", "linkedin", "call", "email")
# (local part, daily limit, warm-up days, first day's limit): four ramps per org
BOXES = (("ada", 6, 0, 6), ("bo", 10, 4, 2), ("cy", 4, 0, 4), ("di", 8, 3, 3))
MAX_DAYS = 30
# the figures bench/outbound.py reports beside its own (the rest under "mailboxes")
HEADLINE = ("max_over_limit", "threaded_share", "non_email_emailed", "dkim_verified_share")
SENT = """
SELECT o.contact_id, o.sequence_step, o.message_id, o.status, o.send_day, o.mailbox_id
FROM outbox o WHERE o.campaign_id = %s
"""


@dataclasses.dataclass
class Org:
    id: str
    domain: str
    campaign: str = ""
    run: str = ""
    contacts: list[str] = dataclasses.field(default_factory=list)


def measure(settings: Settings, db: Database, contacts: int, say: Any) -> dict[str, Any]:
    """Run the phase on ``db`` (its own orgs); its figures, ``ok`` among them."""
    with DnsServer() as dns:
        checker = DnsPythonResolver((dns.host, dns.port), timeout=2.0)
        with SmtpServer(dkim_dns=checker.txt) as smtp:
            now = [START]
            mail = dataclasses.replace(
                settings,
                dns_resolver=(dns.host, dns.port),
                spf_include="_spf.relay.bench",
                sending_domains="required",
                unsubscribe_url="https://colony.example/unsubscribe",
                unsubscribe_token_key="bench-mailbox-key-" + "m" * 24,
                mail_from="Bench <outreach@bench.example>",
            )
            secrets = FileSecrets(Path(settings.data_dir) / "bench-mailbox-secrets")
            deps = local_deps(
                mail,
                db,
                InlineTransport(),
                knowledge=KnowledgeStore(db, OfflineHashEmbedder()),  # approved mail is kept
                sender=SmtpSender(smtp.host, smtp.port, starttls=False, timeout=20),
                secrets=secrets,
                clock=lambda: now[0],
            )
            orgs = [_org(deps, dns, secrets, k, contacts, smtp) for k in range(3)]
            return _run(deps, smtp, orgs, now, say)


def _org(deps: Any, dns: DnsServer, secrets: FileSecrets, k: int, n: int, smtp: SmtpServer) -> Org:
    org = Org(f"org_bench_mb_{k}", f"o{k}.bench-mail.example")
    with deps.db.transaction(org.id) as cur:
        cur.execute(
            "INSERT INTO organizations (id, name) VALUES (%s, %s) ON CONFLICT DO NOTHING",
            (org.id, org.id),
        )
        postal_address.set_address(cur, org.id, f"Bench {k} Inc., 1 Main Street, Austin TX 78701")
        cur.execute(
            "INSERT INTO org_settings (org_id, daily_send_cap, per_domain_hourly_cap)"
            " VALUES (%s, 100000, 100000) ON CONFLICT (org_id) DO UPDATE SET"
            " daily_send_cap = 100000, per_domain_hourly_cap = 100000",
            (org.id,),
        )
    resolver = DnsPythonResolver(deps.settings.dns_resolver, timeout=2.0)
    try:
        sending_domains.add(deps, resolver, secrets, org.id, org.domain, "bench_admin")
    except DomainUnverified as refused:
        publish(dns, refused.detail["publish"])
        sending_domains.add(deps, resolver, secrets, org.id, org.domain, "bench_admin")
    for local, limit, days, first in BOXES:
        body = {"address": f"{local}@{org.domain}", "display_name": local.title()}
        body |= {"daily_limit": limit + k, "warmup_days": days, "warmup_first": first}
        if days:
            body["warmup_start"] = START.date().isoformat()
        mailboxes.add(deps, org.id, MailboxAdd.model_validate(body), "bench_admin")
    steps = [{"channel": c, "delay_days": min(i, 1), "guidance": c} for i, c in enumerate(CHANNELS)]
    library = {"sequences": [{"name": "b", "angle": "Signal", "tier": "T1", "steps": steps}]}
    org_admin.replace_sequences(deps, org.id, SequenceLibrary.model_validate(library))
    with deps.db.transaction(org.id) as cur:
        for i in range(n):
            # the last contact's address refuses for good: late, so no rate trips a breaker
            box = "bounce" if i == n - 1 else f"p{i:03d}"
            address = f"{box}@r{i % 7}.prospect{k}.example"
            if i in (3, n // 2):
                smtp.answer(address, "451 4.3.0 greylisted")  # a soft bounce, then accepted
            row = fetch_one(
                cur,
                "INSERT INTO contacts (org_id, external_id, name, email, company)"
                " VALUES (%s, %s, %s, %s, 'Prospect') RETURNING id",
                (org.id, f"MB-{i:03d}", f"Pat {i}", address),
            )
            assert row is not None
            org.contacts.append(str(row["id"]))
    org.campaign = campaign.create_campaign(
        deps, org.id, name="mailboxes", angle="Signal", tier="T1", contact_ids=org.contacts
    )
    org.run = campaign.launch(deps, org.id, org.campaign)  # its AGT chain is not run here
    deps.transport.pending.clear()
    with deps.db.transaction(org.id) as cur:
        for contact in org.contacts:
            enrollments.enroll(
                cur,
                org.id,
                org.campaign,
                contact,
                run_id=org.run,
                angle="Signal",
                tier="T1",
                steps=len(CHANNELS),
            )
    for contact in org.contacts:
        _draft(deps, org, contact, 1)
    return org


def _draft(deps: Any, org: Org, contact: str, step: int) -> None:
    """What AGT-005's applier queues for a step; then a person decides it."""
    channel = CHANNELS[step - 1]
    with deps.db.transaction(org.id) as cur:
        if step > 1:
            enrollments.advance(cur, org.campaign, contact, step)
        to = fetch_one(cur, "SELECT email FROM contacts WHERE id = %s", (contact,))
        payload = {
            "subject": "Your new site" if step == 1 else "Re: Your new site",
            "body": f"Step {step} ({channel}) for {contact}: a talking point.",
            "contact_id": contact,
            "campaign_id": org.campaign,
            "tier": "T1",
            "angle": "Signal",
            "to": None if channel != "email" else to and to["email"],
            "sequence_step": step,
            "channel": channel,
            "guidance": channel,
        }
        kind = "outbound_message" if channel == "email" else sequences.TASK_KIND
        item = approvals.add(
            cur, org.id, kind, "AGT-005", payload, subject_id=contact, run_id=org.run
        )
    skip = channel != "email" and zlib.crc32(contact.encode()) % 5 == 0  # one in five, stably
    approval.decide(deps, org.id, item, "reject" if skip else "approve", actor=PERSON)


def _take(deps: Any, queue: str) -> list[bytes]:
    """The tasks on ``queue`` due now, taken off it as Cloud Tasks delivers them: a send the
    limits or a soft bounce put off names its due time (``deferred-<epoch>``, ``soft-…``) and
    waits for it; any other task is due at once (sequence steps: the bench plays the days)."""
    tasks, now = deps.transport.tasks, deps.clock().timestamp()
    names = [n for n, t in tasks.items() if t.queue == queue and _due_at(t.task_id) <= now]
    return [tasks.pop(n).body for n in names]


def _due_at(task_id: str) -> float:
    found = re.search(r"-(?:deferred|soft)-(\d+)$", task_id)
    return float(found.group(1)) if found else 0.0


def _run(
    deps: Any, smtp: SmtpServer, orgs: list[Org], now: list[datetime], say: Any
) -> dict[str, Any]:
    by_org = {o.id: o for o in orgs}
    tally: Counter[str] = Counter()
    days = 0
    with ThreadPoolExecutor(max_workers=4) as pool:
        while days < MAX_DAYS:
            progressed = True
            while progressed:  # today: send what can go, then the steps that became due
                progressed = False
                due = [SendMessage.model_validate_json(b) for b in _take(deps, SEND_QUEUE)]
                twice = [t for t in due for _ in "ab"]
                for outcome in pool.map(lambda t: _send(deps, t), twice):
                    tally[outcome] += 1
                    progressed |= outcome in ("sent", "deferred_soft", "bounced")
                for body in _take(deps, SEQUENCE_QUEUE):
                    task = SequenceStep.model_validate_json(body)
                    if "handed_to" in sequences.due(deps, task):
                        deps.transport.pending.clear()  # AGT-005's hand-over: played below
                        _draft(deps, by_org[task.org_id], task.contact_id, task.step)
                        progressed = True
            if not deps.transport.tasks:
                break
            days += 1  # nothing more can go today: the next day's first hour
            now[0] = START + timedelta(days=days)
    say(f"mailboxes: {days + 1} days, {dict(tally)}")
    return _figures(deps, smtp, orgs, tally, days + 1)


def _send(deps: Any, task: SendMessage) -> str:
    outcome = send_once(deps, task.org_id, task.outbox_id)
    if outcome == "in_progress":  # its twin holds it: Cloud Tasks retries it later
        name = f"retry-{task.outbox_id}-{datetime.now(UTC).timestamp()}"
        deps.transport.schedule(SEND_QUEUE, "send", task.model_dump_json().encode(), task_id=name)
    return outcome


def _figures(
    deps: Any, smtp: SmtpServer, orgs: list[Org], tally: Counter[str], days: int
) -> dict[str, Any]:
    received = {str(r.message["Message-ID"]): r for r in smtp.received}
    over, followups, threaded, tasks_out, lost, held = 0, 0, 0, 0, 0, 0
    steps_ended: Counter[str] = Counter()
    for org in orgs:
        with deps.db.transaction(org.id) as cur:
            rows = fetch_all(cur, SENT, (org.campaign,))
            boxes = fetch_all(
                cur,
                "SELECT id, daily_limit, warmup_start, warmup_days, warmup_first"
                " FROM sender_mailboxes",
            )
            states = fetch_all(cur, "SELECT status FROM sequence_enrollments")
            paused = fetch_all(cur, "SELECT 1 FROM campaigns WHERE status = 'paused'")
        # every message its mailbox took on a day, whatever became of it (a bounce left too)
        per_day = Counter((r["mailbox_id"], r["send_day"]) for r in rows if r["send_day"])
        ramps = {b["id"]: _ramp(b) for b in boxes}
        for (box, day), n in per_day.items():
            over = max(over, n - ramps[box].limit_on(day))
        firsts = {r["contact_id"]: r["message_id"] for r in rows if r["sequence_step"] == 1}
        for r in rows:
            if CHANNELS[r["sequence_step"] - 1] != "email":
                tasks_out += 1
            if r["sequence_step"] == len(CHANNELS) and r["message_id"] in received:
                followups += 1
                got = received[r["message_id"]].message["In-Reply-To"]
                threaded += int(str(got) == firsts[r["contact_id"]])
            lost += int(r["status"] not in ("sent", "bounced", "suppressed", "blocked"))
            held += int(r["status"] == "blocked")
        # a campaign its breaker paused holds its mail for a person (blocked), lost to no one
        steps_ended.update(f"{s['status']}{' (paused)' * bool(paused)}" for s in states)
    talking = sum(1 for r in smtp.received if b"(linkedin)" in r.raw or b"(call)" in r.raw)
    ids = Counter(str(r.message["Message-ID"]) for r in smtp.received)
    verified = sum(1 for r in smtp.received if r.dkim)
    result = {
        "orgs": len(orgs),
        "mailboxes_per_org": len(BOXES),
        "contacts_per_org": len(orgs[0].contacts),
        "channels": list(CHANNELS),
        "days": days,
        "received": len(smtp.received),
        "deferred_by_limit": tally["deferred_cap"],
        "soft_bounce_retries": tally["deferred_soft"],
        "hard_bounced": tally["bounced"],
        "enrollments": dict(steps_ended),
        "held_by_a_paused_campaign": held,
        "max_over_limit": over,
        "threaded_share": round(threaded / followups, 4) if followups else None,
        "follow_ups": followups,
        "non_email_emailed": tasks_out + talking,
        "dkim_verified_share": round(verified / len(smtp.received), 4) if smtp.received else None,
        "lost": lost + steps_ended["active"],
        "sent_twice": sum(n - 1 for n in ids.values()),
    }
    result["ok"] = (
        over == 0
        and result["threaded_share"] == 1.0
        and result["non_email_emailed"] == 0
        and result["dkim_verified_share"] == 1.0
        and result["lost"] == 0 == result["sent_twice"]
        and result["deferred_by_limit"] > 0
    )
    return result


def _ramp(row: dict[str, Any]) -> Ramp:
    start: date | None = row["warmup_start"]
    return Ramp(row["daily_limit"], start, row["warmup_days"], row["warmup_first"])
