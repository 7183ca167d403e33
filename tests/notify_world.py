"""A small org for the notification tests: people (members.join, as wt-owners' Clerk sync
will), the real SMTP server and the Slack stand-in, the real SMTP adapter and Slack adapter,
secrets in files (the local SecretStore), and a clock the test moves."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from colony.adapters.secrets import FileSecrets
from colony.adapters.slack import SlackAdapter
from colony.adapters.smtp import SmtpSender
from colony.contracts.notifications import PreferencesUpdate, SlackConnect, SlackIdentity
from colony.flows.notifications import settings as notify
from colony.flows.notifications.run import run
from colony.runtime.deps import Deps
from colony.settings import Settings
from colony.store import Database, fetch_all, fetch_one
from colony.store.tenants import members
from colony.testing.inline import FIXED_NOW, InlineTransport, local_deps
from colony.testing.slack_server import SlackServer
from colony.testing.smtp_server import SmtpServer

ORG, OTHER = "org_alpha", "org_beta"
TEAM, OTHER_TEAM = "T0ALPHA", "T0BETA"
SETTINGS = {
    "COLONY_MAIL_FROM": "Alpha <team@alpha.example>",
    "COLONY_FUNCTION_URLS": json.dumps({"chat": "https://colony.example"}),
}


@dataclass
class Clock:
    now: datetime = FIXED_NOW

    def __call__(self) -> datetime:
        return self.now

    def move(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


@dataclass
class World:
    deps: Deps
    db: Database
    clock: Clock
    smtp: SmtpServer
    slack_server: SlackServer
    slack: SlackAdapter
    tokens: dict[str, str] = field(default_factory=dict)

    def run(self, org_id: str = ORG, **kw: Any) -> dict[str, Any]:
        return run(self.deps, self.slack, org_id, **kw)

    def sql(self, statement: str, params: tuple[Any, ...] = (), org_id: str = ORG) -> list[Any]:
        with self.db.transaction(org_id) as cur:
            cur.execute(statement, params)
            return list(cur.fetchall()) if cur.description else []

    def rows(self, statement: str, params: tuple[Any, ...] = (), org_id: str = ORG) -> list[Any]:
        with self.db.transaction(org_id) as cur:
            return fetch_all(cur, statement, params)

    def choose(self, user_id: str, org_id: str = ORG, **channels: str) -> None:
        notify.set_preferences(self.deps, org_id, user_id, PreferencesUpdate(channels=channels))

    def slack_user(self, user_id: str, slack_user_id: str, org_id: str = ORG) -> None:
        body = SlackIdentity(slack_user_id=slack_user_id)
        notify.set_slack_identity(self.deps, self.deps.secrets, org_id, user_id, body)

    def connect_slack(self, org_id: str = ORG, team: str = TEAM) -> str:
        token = self.slack_server.bot_token(team)
        body = SlackConnect(team_id=team, bot_token=token)
        actor = "user_alice" if org_id == ORG else "user_mallory"
        notify.connect_slack(self.deps, self.deps.secrets, self.slack, org_id, body, actor)
        self.tokens[org_id] = token
        return token

    def contact(self, name: str = "Dana Reed", org_id: str = ORG) -> str:
        with self.db.transaction(org_id) as cur:
            return str(
                fetch_one(
                    cur,
                    "INSERT INTO contacts (org_id, name, email, company)"
                    " VALUES (%s, %s, %s, 'Granite Peak') RETURNING id",
                    (org_id, name, f"{name.split()[0].lower()}@granitepeak.example"),
                )["id"]
            )

    def item(self, subject: str, contact_id: str | None = None, org_id: str = ORG) -> str:
        payload = {"subject": subject, "body": "Hi Dana, the whole body stays here."}
        if contact_id:
            payload["contact_id"] = contact_id
        with self.db.transaction(org_id) as cur:
            return str(
                fetch_one(
                    cur,
                    "INSERT INTO approval_items (org_id, kind, source_agent, subject_id, payload)"
                    " VALUES (%s, 'outbound_message', 'AGT-005', %s, %s::jsonb) RETURNING id",
                    (org_id, contact_id, json.dumps(payload)),
                )["id"]
            )

    def reply(self, item_id: str, contact_id: str, sentiment: str, org_id: str = ORG) -> str:
        with self.db.transaction(org_id) as cur:
            outbox_id = fetch_one(
                cur,
                "INSERT INTO outbox (org_id, approval_item_id, contact_id, subject, body,"
                " status) VALUES (%s, %s, %s, 'Lease costs', 'Hi', 'sent') RETURNING id",
                (org_id, item_id, contact_id),
            )["id"]
            return str(
                fetch_one(
                    cur,
                    "INSERT INTO replies (org_id, outbox_id, contact_id, message_id, body,"
                    " sentiment) VALUES (%s, %s, %s, %s, 'We would love to talk', %s)"
                    " RETURNING id",
                    (org_id, outbox_id, contact_id, f"<r-{item_id}@x>", sentiment),
                )["id"]
            )

    def slack_posts(self, channel: str | None = None) -> list[Any]:
        return [p for p in self.slack_server.posted if channel is None or p.to == channel]

    def mails_to(self, address: str) -> list[Any]:
        return [m for m in self.smtp.received if address in m.rcpt_tos]


def make_world(
    db: Database, tmp_path: Path, smtp: SmtpServer, slack: SlackServer, **env: str
) -> World:
    clock = Clock()
    for org_id, name in ((ORG, "Alpha"), (OTHER, "Beta")):
        with db.transaction(org_id) as cur:
            cur.execute("INSERT INTO organizations (id, name) VALUES (%s, %s)", (org_id, name))
    with db.transaction(ORG) as cur:
        members.join(cur, ORG, "user_alice", "org:admin", "alice@alpha.example", "Alice")
        members.join(cur, ORG, "user_bob", "org:member", "bob@alpha.example", "Bob")
        members.join(cur, ORG, "user_carol", "org:member", None, "Carol")
        members.join(cur, ORG, "user_dan", "org:member", "dan@alpha.example", "Dan")
        members.leave(cur, "user_dan")
    with db.transaction(OTHER) as cur:
        members.join(cur, OTHER, "user_mallory", "org:admin", "mallory@beta.example", "Mal")
    deps = local_deps(
        Settings.from_env({**SETTINGS, **env}),
        db,
        InlineTransport(),
        sender=SmtpSender(smtp.host, smtp.port, starttls=False, timeout=10),
        secrets=FileSecrets(tmp_path / "secrets"),
        clock=clock,
    )
    return World(deps, db, clock, smtp, slack, SlackAdapter(slack.api_url, timeout=5))
