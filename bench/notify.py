"""Notifications benchmark (issue 35): 10 orgs × 20 people, 5,000 events in an hour of
simulated time, then ten days of briefs across two daylight-saving changes; one JSON line.

A scratch database of the embedded PostgreSQL gets ``--orgs`` orgs of ``--members`` people
each (``org_members``; people 0-2 of each org take items, replies and breaker trips in
Slack, the rest by email, the default; every fourth has no address and is not mailed; people
0-9 asked for the brief, half in Slack, half by email). Each org's Slack is connected to the
Slack stand-in (``colony.testing.slack_server``) with a bot token, each Slack person mapped to
their member id; mail goes through the real SMTP adapter to the real SMTP server.

The clock is simulated and fixed (``--start``): the ``notify`` schedule's minute is a tick,
and at each tick every org's turn runs (``colony.flows.notifications.run``: the same flow the
send function runs for the schedule's task), after the tick's events were recorded. The
``--events`` events (items waiting, replies, breaker trips, imports ending, budget alerts;
1% about a prospect erased before they were told) occur at random instants of the hour, in
random orgs; they are recorded with their simulated instant through the store function the
brief's calendar uses (``store.notifications.events.record``): the triggers that record them
as the flows commit are tested in tests/test_notifications.py, and they write the same row.

Reported: ``expected`` (each event × each person who wants its kind by a channel that can
reach them, none for an erased prospect), ``delivered``, ``missed`` and ``duplicates``
(counted from what the Slack stand-in and the SMTP server received: every event's subject
is unique), ``median_delay_s`` and ``p95_delay_s`` (event → Slack message, simulated
seconds: the immediate kinds), ``digest_gap_min_s`` (the shortest gap between two digests
to one person: at most hourly means ≥ 3600), and for the brief, over ``--days`` days from
``--brief-start`` in ten time zones (six of them crossing a daylight-saving change in the
window), ``brief_expected``, ``brief_delivered``, ``brief_max_late_s`` (how long after the
org's chosen local time a brief left, simulated) and ``brief_dst_orgs``. ``ok``: no missed,
no duplicate, median ≤ 60 s, digests at most hourly, every brief within 5 minutes.

The org's time zone is handed to the flow as ``zone_of`` (in production
``local_time.org_time_zone`` reads the team's setting): the bench's orgs need no team rows.

    python bench/notify.py [--orgs 10] [--members 20] [--events 5000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import sys
import time as wall
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from colony.adapters.secrets import FileSecrets
from colony.adapters.slack import SlackAdapter
from colony.adapters.smtp import SmtpSender
from colony.contracts.notifications import (
    BriefTime,
    PreferencesUpdate,
    SlackConnect,
    SlackIdentity,
)
from colony.flows.notifications import settings as notify
from colony.flows.notifications.run import run
from colony.local import embedded
from colony.runtime.deps import Deps
from colony.settings import Settings
from colony.store import Database, connect_factory, fetch_all
from colony.store.notifications import events
from colony.store.tenants import members
from colony.testing.inline import InlineTransport, local_deps
from colony.testing.slack_server import SlackServer
from colony.testing.smtp_server import SmtpServer

ZONES = (  # six cross a daylight-saving change between 24 October and 3 November 2026
    "Europe/Berlin",
    "Europe/London",
    "Europe/Lisbon",
    "America/New_York",
    "America/Chicago",
    "America/Los_Angeles",
    "Asia/Tokyo",
    "America/Sao_Paulo",
    "Asia/Kolkata",
    "UTC",
)
KINDS = (  # (kind, share of the events)
    ("items_waiting", 0.70),
    ("positive_reply", 0.12),
    ("negative_reply", 0.08),
    ("breaker", 0.03),
    ("import", 0.05),
    ("budget", 0.02),
)
SLACK_PEOPLE = 3
BRIEF_PEOPLE = 10
TICK = timedelta(minutes=1)
_SUBJECT = re.compile(r"(E\d{5})")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def people_of(org: int, count: int) -> list[dict[str, Any]]:
    out = []
    for i in range(count):
        role = "org:admin" if i == 0 else "org:member"
        email = None if i % 4 == 3 else f"p{i}@org{org}.example"
        out.append({"user_id": f"user_{org}_{i}", "role": role, "email": email, "i": i})
    return out


def setup(
    deps: Deps, slack: SlackServer, adapter: SlackAdapter, orgs: int, count: int
) -> dict[str, Any]:
    """The orgs, their people and their choices; what each person should get, by kind."""
    takers: dict[str, dict[str, list[tuple[str, str]]]] = {}
    secrets = deps.secrets
    for o in range(orgs):
        org_id, team = f"org_{o:02d}", f"T0ORG{o:02d}"
        with deps.db.transaction(org_id) as cur:
            cur.execute("INSERT INTO organizations (id, name) VALUES (%s, %s)", (org_id, org_id))
            for p in people_of(o, count):
                members.join(cur, org_id, p["user_id"], p["role"], p["email"], p["user_id"])
        token = slack.bot_token(team)
        body = SlackConnect(team_id=team, bot_token=token)
        notify.connect_slack(deps, secrets, adapter, org_id, body, f"user_{o}_0")
        notify.set_brief_time(deps, org_id, BriefTime(brief_at="08:00"))
        wants: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for p in people_of(o, count):
            chosen: dict[str, str] = {}
            if p["i"] < SLACK_PEOPLE:
                sid = f"U{o:02d}{p['i']:03d}"
                body = SlackIdentity(slack_user_id=sid)
                notify.set_slack_identity(deps, secrets, org_id, p["user_id"], body)
                chosen.update(items_waiting="slack", positive_reply="slack", breaker="slack")
            if p["i"] < BRIEF_PEOPLE:
                chosen["brief"] = "slack" if p["i"] % 2 == 0 and p["i"] < SLACK_PEOPLE else "email"
            if chosen:
                update = PreferencesUpdate(channels=chosen)  # type: ignore[arg-type]
                notify.set_preferences(deps, org_id, p["user_id"], update)
            for kind, _ in (*KINDS, ("brief", 0)):
                channel = chosen.get(kind) or _default(kind, p["role"])
                target = _target(channel, p, o)
                if target is not None:
                    wants[kind].append((channel, target))
        takers[org_id] = dict(wants)
    return takers


def _default(kind: str, role: str) -> str:
    if kind in ("negative_reply", "brief"):
        return "off"
    if kind == "budget":
        return "email" if role == "org:admin" else "off"
    return "email"


def _target(channel: str, person: dict[str, Any], org: int) -> str | None:
    if channel == "slack":
        return f"U{org:02d}{person['i']:03d}"
    if channel == "email":
        return person["email"]
    return None


def plan_events(orgs: int, count: int, start: datetime, rng: random.Random) -> list[tuple]:
    kinds = [k for k, _ in KINDS]
    weights = [w for _, w in KINDS]
    planned = []
    for n in range(count):
        kind = rng.choices(kinds, weights)[0]
        at = start + timedelta(seconds=rng.uniform(0, 3600))
        erased = rng.random() < 0.01
        planned.append((at, f"org_{rng.randrange(orgs):02d}", kind, f"E{n:05d}", erased))
    return sorted(planned)


def record(deps: Deps, batch: list[tuple]) -> None:
    by_org: dict[str, list[tuple]] = defaultdict(list)
    for event in batch:
        by_org[event[1]].append(event)
    for org_id, mine in by_org.items():
        with deps.db.transaction(org_id) as cur:
            for at, _, kind, key, erased in mine:
                contact = f"erased-{key}" if erased else None  # no such contact: erased
                link = f"/overview#event-{key}"
                events.record(
                    cur, org_id, kind, key, f"Event {key}", link, occurred_at=at, contact_id=contact
                )


def tick_all(deps: Deps, slack: SlackAdapter, orgs: list[str], zones: dict[str, ZoneInfo]) -> None:
    for org_id in orgs:
        run(deps, slack, org_id, zone_of=lambda _cur, z=zones[org_id]: z)


def measure(
    args: argparse.Namespace, deps: Deps, clock: Clock, smtp: SmtpServer, slack_server: SlackServer
) -> dict[str, Any]:
    rng = random.Random(args.seed)
    orgs = [f"org_{o:02d}" for o in range(args.orgs)]
    zones = {org: ZoneInfo(ZONES[i % len(ZONES)]) for i, org in enumerate(orgs)}
    slack = SlackAdapter(slack_server.api_url, timeout=10)
    takers = setup(deps, slack_server, slack, args.orgs, args.members)
    # the events' hour: minute ticks until an hour after the last event (digests' window)
    start = clock.now
    planned = plan_events(args.orgs, args.events, start, rng)
    began, pos = wall.perf_counter(), 0
    tick = start
    while tick <= start + timedelta(hours=2, minutes=5):
        tick += TICK
        clock.now = tick
        batch = []
        while pos < len(planned) and planned[pos][0] <= tick:
            batch.append(planned[pos])
            pos += 1
        record(deps, batch)
        tick_all(deps, slack, orgs, zones)
    events_s = wall.perf_counter() - began
    expected: Counter[tuple[str, str]] = Counter()
    for _at, org_id, kind, key, erased in planned:
        if not erased:
            for _channel, target in takers[org_id].get(kind, []):
                expected[(target, key)] += 1
    got: Counter[tuple[str, str]] = Counter()
    for post in slack_server.posted:
        for key in set(_SUBJECT.findall(post.text)):
            got[(post.to, key)] += 1
    for mail in smtp.received:
        for key in set(_SUBJECT.findall(mail.message.get_content())):
            got[(mail.rcpt_tos[0], key)] += 1
    delays = slack_delays(deps, orgs)
    gaps = digest_gaps(deps, orgs)
    # the briefs: ten days across the daylight-saving changes, from the next brief on
    brief = briefs(args, deps, clock, slack, smtp, slack_server, orgs, zones, takers)
    missed = sum(1 for k in expected if k not in got)
    duplicates = sum(n - 1 for n in got.values() if n > 1)
    unexpected = sum(1 for k in got if k not in expected)
    median = statistics.median(delays) if delays else None
    result = {
        "orgs": args.orgs,
        "members": args.members,
        "events": args.events,
        "expected": sum(expected.values()),
        "delivered": sum(min(n, 1) for k, n in got.items() if k in expected),
        "missed": missed,
        "duplicates": duplicates,
        "unexpected": unexpected,
        "slack_messages": len(slack_server.posted),
        "emails": len(smtp.received),
        "median_delay_s": median,
        "p95_delay_s": _p95(delays),
        "digest_gap_min_s": min(gaps) if gaps else None,
        "events_phase_s": round(events_s, 1),
        **brief,
    }
    result["ok"] = (
        missed == 0
        and duplicates == 0
        and unexpected == 0
        and median is not None
        and median <= 60
        and (not gaps or min(gaps) >= 3600)
        and brief["brief_missed"] == 0
        and brief["brief_max_late_s"] is not None
        and brief["brief_max_late_s"] <= 300
    )
    return result


def _p95(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]


DELAYS = """
SELECT extract(epoch FROM n.sent_at - e.occurred_at)::float AS delay
FROM notifications n
JOIN notification_items i ON i.org_id = n.org_id AND i.notification_id = n.id
JOIN notification_events e ON e.org_id = i.org_id AND e.id = i.event_id
WHERE n.channel = 'slack' AND n.status = 'sent' AND e.kind <> 'brief'
"""
GAPS = """
SELECT extract(epoch FROM sent_at - lag(sent_at) OVER (PARTITION BY user_id ORDER BY sent_at))
       ::float AS gap
FROM notifications WHERE channel = 'email' AND kind = 'digest' AND status = 'sent'
"""
BRIEFS = """
SELECT n.user_id, n.channel, n.sent_at, e.event_key AS day FROM notifications n
JOIN notification_items i ON i.org_id = n.org_id AND i.notification_id = n.id
JOIN notification_events e ON e.org_id = i.org_id AND e.id = i.event_id
WHERE n.kind = 'brief' AND n.status = 'sent'
"""


def slack_delays(deps: Deps, orgs: list[str]) -> list[float]:
    out: list[float] = []
    for org_id in orgs:
        with deps.db.transaction(org_id) as cur:
            out += [float(r["delay"]) for r in fetch_all(cur, DELAYS)]
    return out


def digest_gaps(deps: Deps, orgs: list[str]) -> list[float]:
    out: list[float] = []
    for org_id in orgs:
        with deps.db.transaction(org_id) as cur:
            out += [float(r["gap"]) for r in fetch_all(cur, GAPS) if r["gap"] is not None]
    return out


def briefs(
    args: argparse.Namespace,
    deps: Deps,
    clock: Clock,
    slack: SlackAdapter,
    smtp: SmtpServer,
    slack_server: SlackServer,
    orgs: list[str],
    zones: dict[str, ZoneInfo],
    takers: dict[str, dict[str, list[tuple[str, str]]]],
) -> dict[str, Any]:
    """Jump the clock to the brief window and tick each minute at which any org's brief is
    due (the notify schedule's audience: no org is served between), for ``--days`` days."""
    start = datetime.fromisoformat(args.brief_start).replace(tzinfo=UTC)
    for org_id in orgs:  # the calendar from the window's start, in each org's zone
        clock.now = start
        with deps.db.transaction(org_id) as cur:
            cur.execute("UPDATE notify_settings SET brief_next_at = NULL")
        notify.set_brief_time(deps, org_id, BriefTime(brief_at="08:00"))
        with deps.db.transaction(org_id) as cur:  # set_brief_time used UTC: the org's zone
            at = _next_local(start, zones[org_id])
            cur.execute("UPDATE notify_settings SET brief_next_at = %s", (at,))
    end = start + timedelta(days=args.days)
    dst_orgs = sum(1 for o in orgs if zones[o].utcoffset(start) != zones[o].utcoffset(end))
    while True:
        due = []
        for org_id in orgs:
            with deps.db.transaction(org_id) as cur:
                row = fetch_all(cur, "SELECT brief_next_at FROM notify_settings")[0]
            due.append(row["brief_next_at"])
        first = min(due)
        if first >= end:
            break
        # the schedule's next minute at or after it
        tick = first.replace(second=0, microsecond=0)
        tick = tick if tick == first else tick + TICK
        clock.now = tick
        tick_all(deps, slack, orgs, zones)
        clock.now = tick + TICK  # and the next minute, for what the first left due
        tick_all(deps, slack, orgs, zones)
    late: list[float] = []
    delivered = 0
    for org_id in orgs:
        zone = zones[org_id]
        with deps.db.transaction(org_id) as cur:
            rows = fetch_all(cur, BRIEFS)
        for r in rows:
            local = r["sent_at"].astimezone(zone)
            target = datetime.combine(local.date(), datetime.min.time(), tzinfo=zone).replace(
                hour=8
            )
            late.append((local - target).total_seconds())
            delivered += 1
    per_day = sum(len(takers[o].get("brief", [])) for o in orgs)
    expected = per_day * args.days
    return {
        "brief_days": args.days,
        "brief_expected": expected,
        "brief_delivered": delivered,
        "brief_missed": expected - delivered,
        "brief_max_late_s": max(late) if late else None,
        "brief_min_late_s": min(late) if late else None,
        "brief_dst_orgs": dst_orgs,
    }


def _next_local(after: datetime, zone: ZoneInfo) -> datetime:
    from colony.flows.notifications.local_time import next_at

    return next_at(after, datetime.min.time().replace(hour=8), zone)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orgs", type=int, default=10)
    parser.add_argument("--members", type=int, default=20)
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--start", default="2026-10-20T13:00:00")
    parser.add_argument("--brief-start", default="2026-10-23T00:00:00")
    parser.add_argument("--days", type=int, default=10)
    parser.add_argument("--seed", type=int, default=35)
    args = parser.parse_args()
    os.environ.setdefault("XDG_RUNTIME_DIR", f"/tmp/colony-runtime-{os.getuid()}")
    clock = Clock(datetime.fromisoformat(args.start).replace(tzinfo=UTC))
    with embedded.scratch_database(Settings.from_env(), "bench_notify") as settings:
        db = Database(connect_factory(settings, "app"), pool_size=4)
        with SmtpServer() as smtp, SlackServer() as slack:
            mail = {
                "COLONY_MAIL_FROM": "Colony <team@colony.example>",
                "COLONY_FUNCTION_URLS": json.dumps({"chat": "https://colony.example"}),
            }
            bench_settings = Settings.from_env({**dict(os.environ), **mail})
            deps = local_deps(
                bench_settings,
                db,
                InlineTransport(),
                sender=SmtpSender(smtp.host, smtp.port, starttls=False, timeout=10),
                secrets=FileSecrets(settings.data_dir / f"bench-notify-secrets-{os.getpid()}"),
                clock=clock,
            )
            result = measure(args, deps, clock, smtp, slack)
        db.close()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
