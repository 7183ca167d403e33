"""``make run``'s team scene (issue 35 item 5): two people join the demo org, own its
prospects, an approval waits in one's queue, a positive reply reaches them in Slack and by an
email digest, and the brief comes at the team's local morning.

Every step takes the path production takes::

    Clerk organizationMembership.created (Svix-signed) ─► clerk-webhook: Maya (admin), Theo
    admin API as Maya: PUT /orgs/{org}/team (America/New_York, the assignment rule)
        ─► POST /orgs/{org}/owners/assign (the rule, round robin for the rest)
    admin API: PUT /orgs/{org}/notifications/slack (the Slack stand-in's bot token)
    chat API as each person: PUT /notifications/slack (their Slack id), PUT /notifications
    a deal update proposed (as AGT-006 does) ─► routed to the deal's owner (chat /approvals)
    a positive reply through the reply path (``replies.ingest``, as the mailbox poll hands it)
    the notify schedule posted to data-lifecycle (as Cloud Scheduler would)
        ─► one task per org on the send queue ─► the send function: Slack + the email digest
    admin API: PUT /orgs/{org}/notifications/brief (08:00 local) ─► its next instant in UTC
    the org's notify turn run with a clock moved to that instant (as the send function would
    run it then: the functions keep the real clock, and waiting for a real 08:00 is no demo)

The moved clock is the scene's own, but what that turn sends is stored with its instant: a
digest still open then goes with it, so on a later ``make run`` the person's next digest is
due an hour after that instant (shown as such), not an hour after the real one.

The Slack stand-in must be up before the functions start (``slack_stand_in``: they inherit
its address); the clerk-webhook secret is the local one every function is given.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import httpx

from colony.errors import ConfigError
from colony.local.demo_context import DemoContext
from colony.local.progress import wait_until
from colony.testing.slack_server import SlackServer

ZONE = "America/New_York"
BRIEF_AT = "08:00"
SLACK_TEAM = "T0ZOOMPROP"
SLACK_URL = "COLONY_SLACK_API_URL"
LAST_NOTIFY = "team_demo_notify_minute"  # in .colony/stack.json: the minute last posted
# (user id, Clerk role, email, first name, last name, Slack member id)
PEOPLE = (
    ("user_maya", "org:admin", "maya@zoomprop.example", "Maya", "Chen", "U0MAYA"),
    ("user_theo", "org:member", "theo@zoomprop.example", "Theo", "Okafor", "U0THEO"),
)
# Maya hears of replies in Slack and gets the brief there; Theo reads his email digest.
CHANNELS = {
    "user_maya": {"positive_reply": "slack", "items_waiting": "email", "brief": "slack"},
    "user_theo": {"positive_reply": "email", "items_waiting": "email", "brief": "email"},
}
# The prospects outside the US go to Theo; the rest round robin across both.
RULES = [{"field": "country", "values": ["CA", "GB", "DE"], "members": ["user_theo"]}]
DEAL = "D-004"  # its update is proposed once the deal has an owner
DEAL_OF = "SELECT id, name, stage, owner_id FROM deals WHERE external_id = %s"
REPLY = "Yes, interested. Could we book a call on Thursday afternoon?\n"

Say = Callable[[str], None]


@dataclass(frozen=True)
class TeamDay:
    """What the scene showed (its test checks it against the stores and the stand-ins)."""

    owners: dict[str, int]  # user id → prospects owned
    item_id: str
    item_queue: str | None  # the assignee the chat API shows on the card
    slack: str  # the positive reply's Slack message text (its subject line)
    digest: str  # the digest email's subject
    brief_local: str  # the brief's delivery instant in the org's zone
    brief_subjects: list[str]


@contextmanager
def slack_stand_in(say: Say) -> Iterator[SlackServer]:
    """The Slack stand-in; while it is up ``COLONY_SLACK_API_URL`` names it in this process's
    environment, which the function processes started inside inherit (as ``local_storage``
    does for the GCS emulator)."""
    with SlackServer() as slack:
        say(f"Slack stand-in (Web API, Block Kit checked) at {slack.api_url}")
        previous = os.environ.get(SLACK_URL)
        os.environ[SLACK_URL] = slack.api_url
        try:
            yield slack
        finally:
            if previous is None:
                os.environ.pop(SLACK_URL, None)
            else:
                os.environ[SLACK_URL] = previous


class _As:
    """Calls to a function's HTTP API as one person of the org."""

    def __init__(self, http: httpx.Client, token: str) -> None:
        self.http, self.headers = http, {"Authorization": f"Bearer {token}"}

    def __call__(self, method: str, url: str, **kw: Any) -> Any:
        answer = self.http.request(method, url, headers=self.headers, **kw)
        if answer.status_code >= 400:
            raise ConfigError(f"{method} {url}: {answer.status_code} {answer.text[:300]}")
        return answer.json()


def run_team_demo(demo: DemoContext, slack: SlackServer, *, timeout: float = 60) -> TeamDay:
    from colony.adapters.transport_local import LocalTransport
    from colony.local.tokens import mint_local_token
    from colony.testing.inline import local_deps

    started = time.perf_counter()
    say, org, urls = demo.say, demo.org_id, demo.servers.urls
    data_dir = demo.settings.data_dir
    say(f"the team: two people join {org} through Clerk, own its prospects and hear the news…")
    # one transport for the scene: what the flows enqueue (the deal update's CRM read) is
    # delivered to the functions before it closes
    transport = LocalTransport(urls)
    flow_deps = local_deps(demo.settings, demo.db, transport)
    with transport, httpx.Client(timeout=30) as http:
        _join(demo, http)
        maya = _As(http, mint_local_token(data_dir, org, "user_maya", org_claim="v2"))
        base = f"{urls['admin']}/orgs/{org}"
        maya("PUT", f"{base}/team", json={"time_zone": ZONE, "assignment": {"rules": RULES}})
        assigned = maya("POST", f"{base}/owners/assign")
        owners = _owners(demo)
        say(
            f"  admin API: time zone {ZONE}; assigned {assigned['contacts']} prospects and"
            f" {assigned['deals']} deals: "
            + ", ".join(f"{user} owns {n}" for user, n in owners.items())
            + " (outside the US: Theo; the rest round robin)"
        )
        token = slack.bot_token(SLACK_TEAM)
        maya("PUT", f"{base}/notifications/slack", json={"team_id": SLACK_TEAM, "bot_token": token})
        for user, *_, slack_id in PEOPLE:
            person = _As(http, mint_local_token(data_dir, org, user))
            person("PUT", f"{urls['chat']}/notifications/slack", json={"slack_user_id": slack_id})
            person("PUT", f"{urls['chat']}/notifications", json={"channels": CHANNELS[user]})
        say(f"  Slack workspace {SLACK_TEAM} connected; each person chose their channels")
        item, queue = _routed_item(demo, flow_deps, http)
        posted_before = len(slack.posted)
        mail_before = len(demo.mail.received) if demo.mail else 0
        _positive_reply(demo, flow_deps)
        _notify_schedule(demo, http)
        reply_post = wait_until(
            "the positive reply in Slack",
            lambda: next((p for p in slack.posted[posted_before:] if p.to == "U0MAYA"), None),
            timeout,
            alive=demo.servers.check,
        )
        digest = wait_until(
            "Theo's email digest",
            lambda: _digest(demo, "user_theo", "theo@zoomprop.example", mail_before),
            timeout,
            alive=demo.servers.check,
        )
        say(f"  Slack to Maya (U0MAYA): {reply_post.text!r}")
        say(f"  email digest to Theo: {digest}")
        brief = maya("PUT", f"{base}/notifications/brief", json={"brief_at": BRIEF_AT})
        transport.drain(timeout)
    at = datetime.fromisoformat(brief["next_at"]).astimezone(UTC)
    local = at.astimezone(ZoneInfo(ZONE))
    subjects = _brief_at(demo, slack, at, mail_before, len(slack.posted))
    shown = "; ".join(repr(s) for s in subjects)
    say(
        f"  the brief at {BRIEF_AT} {ZONE}: next due {at:%Y-%m-%d %H:%M} UTC; with the local"
        f" clock moved there, "
        + (
            f"delivered {local:%a %d %b %H:%M %Z}: {shown}"
            if subjects
            else "none to send: an earlier run delivered that day's brief"
        )
        + f" (the team scene took {time.perf_counter() - started:.1f}s)"
    )
    return TeamDay(
        owners,
        item,
        queue,
        reply_post.text,
        digest,
        local.isoformat(),
        subjects,
    )


def _join(demo: DemoContext, http: httpx.Client) -> None:
    """Maya and Theo added to the org in Clerk: its webhook events, Svix-signed, delivered to
    the running clerk-webhook function (a redelivery of the same svix-id changes nothing)."""
    from colony.local.secrets import local_secrets
    from colony.testing.clerk_memberships import ClerkOrgs, signed

    secret = local_secrets(demo.settings.data_dir)["COLONY_CLERK_WEBHOOK_SECRET"]
    clerk = ClerkOrgs()
    clerk.org(demo.org_id, "ZoomProp")
    for user, role, email, first, last, _ in PEOPLE:
        event = clerk.join(demo.org_id, user, role, email=email, first_name=first, last_name=last)
        body, headers = signed(event, secret, f"msg_{demo.org_id}_{user}_joined")
        answer = http.post(demo.servers.urls["clerk-webhook"], content=body, headers=headers)
        if answer.status_code != 200:
            raise ConfigError(f"clerk-webhook: {answer.status_code} {answer.text[:300]}")
    demo.say("  Clerk → clerk-webhook: Maya Chen (admin) and Theo Okafor (member) joined")


def _owners(demo: DemoContext) -> dict[str, int]:
    from colony.store.tenants import ownership

    with demo.db.transaction(demo.org_id) as cur:
        return {user: ownership.owned(cur, "contact", user) for user, *_ in PEOPLE}


def _routed_item(demo: DemoContext, flow_deps: Any, http: httpx.Client) -> tuple[str, str | None]:
    """A deal update proposed as AGT-006 proposes one; the chat API's card says whose queue
    it waits in (the deal's owner, by routing when it was added)."""
    from colony.flows.pipeline import deals
    from colony.local.tokens import mint_local_token
    from colony.store import fetch_one

    with demo.db.transaction(demo.org_id) as cur:
        deal = fetch_one(cur, DEAL_OF, (DEAL,))
    if deal is None:
        raise ConfigError(f"the demo org has no deal {DEAL}")
    item = deals.propose_deal_update(
        flow_deps,
        demo.org_id,
        deal["id"],
        {"next_action": "Send the pilot's utilization baseline"},
        source={"demo": "make run, team scene"},
    )
    owner = _As(http, mint_local_token(demo.settings.data_dir, demo.org_id, deal["owner_id"]))
    cards = owner("GET", f"{demo.servers.urls['chat']}/approvals", params={"kind": "deal_update"})
    queue = next(c for c in cards["items"] if c["id"] == item)["queue"]
    demo.say(
        f"  a deal update on {deal['name']!r} (the deal is {deal['owner_id']}'s) waits in"
        f" {queue['assignee_name'] or queue['assignee']}'s queue"
        f" ({'theirs' if queue['mine'] else 'not theirs'}, as its owner reads /approvals)"
    )
    return item, queue["assignee"]


def _positive_reply(demo: DemoContext, deps: Any) -> None:
    """A prospect answers the newest message the org sent, through the reply path the
    mailbox poll uses; its trigger records the ``positive_reply`` event. The local SMTP
    server holds every org's mail (the new customer's too): another org's message is
    refused by the reply path and the one before it tried."""
    from colony.errors import NotFound
    from colony.flows.outbound import replies
    from colony.ports import InboundMail

    sent = [m for m in (demo.mail.received if demo.mail else []) if m.message["Message-ID"]]
    for last in reversed(sent):
        reply = InboundMail(
            message_id=f"<team-{uuid.uuid4().hex[:12]}@prospect.example>",
            sender=last.rcpt_tos[0],
            subject=f"Re: {last.message['Subject']}",
            text=REPLY,
            in_reply_to=str(last.message["Message-ID"]),
        )
        try:
            got = replies.ingest(deps, reply, event_id=reply.message_id, org_id=demo.org_id)
        except NotFound:
            continue
        demo.say(f"  {last.rcpt_tos[0]} replied: {got['sentiment']}")
        return
    raise ConfigError(f"no message {demo.org_id} sent is on the local SMTP server to reply to")


def _notify_schedule(demo: DemoContext, http: httpx.Client) -> None:
    """What Cloud Scheduler posts each minute: the fan-out enqueues each org's notify task on
    the send queue (named by the minute and the org), which the local transport delivers to
    the send function. A make run started again within the minute its last one posted waits
    for the next minute, as the scheduler would: that minute's task has run already."""
    from colony.local.stack import read_stack, update_stack

    minute = datetime.now(UTC).replace(second=0, microsecond=0)
    if read_stack(demo.settings).get(LAST_NOTIFY) == minute.isoformat():
        demo.say("  (an earlier make run took this minute's notify run: the next minute's…)")
        minute += timedelta(minutes=1)
        time.sleep(max(0.0, (minute - datetime.now(UTC)).total_seconds()))
    update_stack(demo.settings, **{LAST_NOTIFY: minute.isoformat()})
    answer = http.post(
        demo.servers.urls["data-lifecycle"],
        json={"task": {"kind": "schedule", "name": "notify"}},
        headers={"X-CloudScheduler-ScheduleTime": minute.isoformat().replace("+00:00", "Z")},
    )
    if answer.status_code != 200:
        raise ConfigError(f"the notify schedule: {answer.status_code} {answer.text[:300]}")


def _digest(demo: DemoContext, user: str, address: str, after: int) -> str | None:
    """The digest's subject once the SMTP server has it; or, when the person's open digest
    is due later (one went out within the hour: a second ``make run``), when it will go."""
    from colony.store.notifications import outbox

    for got in demo.mail.received[after:] if demo.mail else []:
        if address in got.rcpt_tos:
            return repr(str(got.message["Subject"]))
    with demo.db.transaction(demo.org_id) as cur:
        due = outbox.open_digest_due(cur, user)
    if due is not None and due > datetime.now(UTC):
        return f"held in the open digest until {due:%a %d %b %H:%M} UTC (at most one an hour)"
    return None


def _brief_at(
    demo: DemoContext, slack: SlackServer, at: datetime, mail_after: int, posted_after: int
) -> list[str]:
    """The org's notify turn as the send function runs it, on a clock moved to ``at``."""
    from colony.adapters.secrets import FileSecrets
    from colony.adapters.slack import SlackAdapter
    from colony.adapters.smtp import SmtpSender
    from colony.adapters.transport_local import LocalTransport
    from colony.flows.notifications.run import run
    from colony.testing.inline import local_deps

    mail = demo.mail
    if mail is None:
        raise ConfigError("the team scene needs the local SMTP server")
    env = mail.env()
    settings = replace(
        demo.settings,
        mail_from=env["COLONY_MAIL_FROM"],
        function_urls=demo.servers.urls,
    )
    transport = LocalTransport(demo.servers.urls)
    try:
        deps = local_deps(
            settings,
            demo.db,
            transport,
            sender=SmtpSender(mail.host, mail.port, starttls=False, timeout=10),
            secrets=FileSecrets(demo.settings.data_dir / "secrets"),
            clock=lambda: at,
        )
        done = run(deps, SlackAdapter(slack.api_url, timeout=10), demo.org_id)
    finally:
        transport.close()
    if done["brief"] is None:
        raise ConfigError(f"the brief was not due at {at:%H:%M} UTC: {done}")
    subjects = [p.text.splitlines()[0] for p in slack.posted[posted_after:] if p.to == "U0MAYA"]
    subjects += [
        str(m.message["Subject"])
        for m in mail.received[mail_after:]
        if "theo@zoomprop.example" in m.rcpt_tos and "brief" in str(m.message["Subject"])
    ]
    return subjects
