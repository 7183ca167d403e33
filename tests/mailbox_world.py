"""The world the sender-mailbox tests run in (issue 39 item 2): the real PostgreSQL as the
application role, the DNS stand-in on the wire (two orgs' sending domains verified through
it), the real SMTP server verifying DKIM against the same DNS, the Gmail and Graph stand-ins
relaying what they accept into that server, the local secret store, and the inline
transport whose tasks a test reads (deferrals, resumes)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from colony.adapters.dns import DnsPythonResolver
from colony.adapters.gmail import gmail_from_settings
from colony.adapters.graph_mail import graph_from_settings
from colony.adapters.secrets import FileSecrets
from colony.adapters.smtp import SmtpSender
from colony.contracts.mailboxes import MailboxAdd
from colony.errors import DomainUnverified
from colony.flows.outbound import mailboxes, sending, sending_domains
from colony.runtime.deps import Deps
from colony.settings import Settings
from colony.store import fetch_all, fetch_one
from colony.store.outbound import outbox, postal_address
from colony.testing.dns_server import DnsServer, publish
from colony.testing.gmail_server import GmailServer
from colony.testing.graph_server import GraphServer
from colony.testing.inline import InlineTransport, local_deps
from colony.testing.smtp_server import SmtpServer
from tests.conftest import APP_ROLE, PgDB

ACME, RIVAL = "org_acme_mb", "org_rival_mb"
DOMAIN, SECOND, RIVAL_DOMAIN = "mail.acme.example", "team.acme.example", "rival.example"
INCLUDE = "_spf.relay.test"
NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
REDIRECT = "https://colony.example/mailboxes/callback"


@dataclass
class MailWorld:
    testdb: PgDB
    deps: Deps
    dns: DnsServer
    smtp: SmtpServer
    gmail: GmailServer
    graph: GraphServer
    secrets: FileSecrets
    transport: InlineTransport
    now: list[datetime]

    @property
    def resolver(self) -> DnsPythonResolver:
        return DnsPythonResolver(self.deps.settings.dns_resolver, timeout=2.0)

    def verify(self, org: str, domain: str) -> None:
        add = sending_domains.add
        try:
            add(self.deps, self.resolver, self.secrets, org, domain, "user_ada")
        except DomainUnverified as refused:
            publish(self.dns, refused.detail["publish"])
        add(self.deps, self.resolver, self.secrets, org, domain, "user_ada")

    def mailbox(self, org: str, address: str, limit: int = 50, **extra: Any) -> str:
        body = MailboxAdd.model_validate(
            {"address": address, "display_name": extra.pop("name", "Ada"), "daily_limit": limit}
            | extra
        )
        return str(mailboxes.add(self.deps, org, body, "user_ada")["id"])

    def rows(self, org: str, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        with self.deps.db.transaction(org) as cur:
            return fetch_all(cur, sql, params)

    def campaign(self, org: str) -> str:
        with self.deps.db.transaction(org) as cur:
            row = fetch_one(
                cur,
                "INSERT INTO campaigns (org_id, name, angle, tier) VALUES (%s, 'Q2', 'Pain',"
                " 'T1') RETURNING id",
                (org,),
            )
        assert row is not None
        return str(row["id"])

    def contact(self, org: str, email: str) -> str:
        with self.deps.db.transaction(org) as cur:
            row = fetch_one(
                cur,
                "INSERT INTO contacts (org_id, name, email, company) VALUES (%s, 'Dana', %s,"
                " 'GP') RETURNING id",
                (org, email),
            )
        assert row is not None
        return str(row["id"])

    def message(
        self,
        org: str,
        contact: str,
        *,
        campaign: str | None = None,
        step: int = 1,
        subject: str = "Lease costs",
    ) -> str:
        """An approved message queued for sending: its outbox id."""
        with self.deps.db.transaction(org) as cur:
            item = fetch_one(
                cur,
                "INSERT INTO approval_items (org_id, kind, source_agent, payload)"
                " VALUES (%s, 'outbound_message', 'AGT-005', '{}'::jsonb) RETURNING id",
                (org,),
            )
            assert item is not None
            return outbox.queue(
                cur,
                org,
                item["id"],
                contact_id=contact,
                campaign_id=campaign,
                subject=subject,
                body=f"Hi Dana,\nStep {step}.",
                sequence_step=step,
            )

    def send(self, org: str, outbox_id: str) -> dict[str, Any]:
        return sending.send(self.deps, org, outbox_id)

    def outbox(self, org: str, outbox_id: str) -> dict[str, Any]:
        (row,) = self.rows(
            org,
            "SELECT status, mailbox_id, send_day, message_id, wait_reason, provider_thread"
            " FROM outbox WHERE id = %s",
            (outbox_id,),
        )
        return row

    def audit(self, org: str) -> list[tuple[str, str, str | None]]:
        rows = self.rows(org, "SELECT event, action, reason FROM audit_log ORDER BY id")
        return [(r["event"], r["action"], r["reason"]) for r in rows]

    def deferred(self) -> list[Any]:
        return [t for t in self.transport.tasks.values() if "-deferred-" in t.task_id]

    @property
    def secrets_root(self) -> Path:
        return self.deps.settings.data_dir / "secrets"

    def today(self) -> date:
        return self.now[0].date()


def settings_for(
    testdb: PgDB, tmp_path: Path, dns: DnsServer, smtp: SmtpServer, *extra: dict[str, str]
) -> Settings:
    env = {
        "COLONY_DB_MODE": "dsn",
        "COLONY_DB_DSN": testdb.dsn(APP_ROLE),
        "COLONY_EMBEDDING_DIM": str(testdb.dim),
        "COLONY_DATA_DIR": str(tmp_path),
        "COLONY_DNS_RESOLVER": dns.address,
        "COLONY_SPF_INCLUDE": INCLUDE,
        "COLONY_UNSUBSCRIBE_URL": "https://colony.example/unsubscribe",
        "COLONY_SENDING_DOMAINS": "required",
        "COLONY_MAILBOX_REDIRECT_URI": REDIRECT,
        **smtp.env("Colony <outreach@colony.example>"),
    }
    for more in extra:
        env |= more
    return Settings.from_env(env)


@pytest.fixture
def mail_world(testdb: PgDB, tmp_path: Path, no_ambient_config: None) -> Iterator[MailWorld]:
    db = testdb.app()
    for org in (ACME, RIVAL):
        with db.transaction(org) as cur:
            cur.execute("INSERT INTO organizations (id, name) VALUES (%s, %s)", (org, org))
            # campaign email needs the org's postal address for its footer (issue 39 item 4)
            postal_address.set_address(cur, org, f"{org} Inc., 1 Main Street, Austin TX 78701")
    with DnsServer() as dns:
        checker = DnsPythonResolver((dns.host, dns.port), timeout=2.0)
        with SmtpServer(dkim_dns=checker.txt) as smtp:
            relay = (smtp.host, smtp.port)
            with GmailServer(relay=relay) as gmail, GraphServer(relay=relay) as graph:
                settings = settings_for(testdb, tmp_path, dns, smtp, gmail.env(), graph.env())
                secrets = FileSecrets(tmp_path / "secrets")
                transport = InlineTransport()
                now = [NOW]
                apis = {
                    "gmail": gmail_from_settings(settings),
                    "graph": graph_from_settings(settings),
                }
                sender = SmtpSender(smtp.host, smtp.port, starttls=False, timeout=10)
                deps = local_deps(
                    settings,
                    db,
                    transport,
                    sender=sender,
                    secrets=secrets,
                    mailbox_apis=apis,
                    clock=lambda: now[0],
                )
                world = MailWorld(testdb, deps, dns, smtp, gmail, graph, secrets, transport, now)
                world.verify(ACME, DOMAIN)
                world.verify(ACME, SECOND)
                world.verify(RIVAL, RIVAL_DOMAIN)
                try:
                    yield world
                finally:
                    for api in apis.values():
                        api.close()


__all__ = ["ACME", "DOMAIN", "RIVAL", "RIVAL_DOMAIN", "SECOND", "MailWorld", "mail_world"]
