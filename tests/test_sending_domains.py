"""Sending domains (issue 39 item 3), end to end below HTTP: the real PostgreSQL, the DNS
stand-in on the wire (``colony.testing.dns_server``), the local secret store, and the real SMTP
server verifying each received message's DKIM signature with dkimpy against the same DNS.

A domain is refused with the records to publish until its DNS passes, then bound to its org;
a message from it is signed and verifies at the receiving server; a domain that breaks later
pauses its mail (which waits, and goes once it passes again); another org's domain can be
neither added nor sent from; under ``required`` a From address off the org's domains is
refused, on the record."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from colony.adapters.dns import DnsPythonResolver
from colony.adapters.secrets import FileSecrets
from colony.adapters.smtp import SmtpSender
from colony.contracts.admin import OrgSettingsReplace
from colony.errors import DomainUnverified, OwnedElsewhere, Unprocessable, UpstreamError
from colony.flows.outbound import sending, sending_domains
from colony.flows.tenants import org_admin
from colony.runtime.deps import Deps, set_deps_for_tests
from colony.settings import Settings
from colony.store import fetch_all, fetch_one
from colony.store.outbound import outbox
from colony.testing.dns_server import DnsServer, publish, spf
from colony.testing.inline import InlineTransport, local_deps
from colony.testing.smtp_server import SmtpServer, dkim_verifies
from tests.apps import registered_app
from tests.conftest import APP_ROLE, PgDB

pytestmark = pytest.mark.covers("ENT-012", "fn:send", "fn:admin")

ACME, RIVAL = "org_acme", "org_rival"
DOMAIN = "mail.acme.example"
INCLUDE = "_spf.relay.test"
FROM = f"Ada Lovelace <ada@{DOMAIN}>"


@dataclass
class World:
    testdb: PgDB
    deps: Deps
    dns: DnsServer
    smtp: SmtpServer
    secrets: FileSecrets
    secrets_dir: Path
    transport: InlineTransport

    @property
    def resolver(self) -> DnsPythonResolver:
        return DnsPythonResolver(self.deps.settings.dns_resolver, timeout=2.0)

    def add(self, org: str, domain: str = DOMAIN, actor: str = "user_ada") -> dict[str, Any]:
        return sending_domains.add(self.deps, self.resolver, self.secrets, org, domain, actor)

    def refusal(self, org: str, domain: str = DOMAIN) -> dict[str, Any]:
        with pytest.raises(DomainUnverified) as refused:
            self.add(org, domain)
        assert refused.value.code == "domain_unverified"
        return refused.value.detail

    def verified(self, org: str = ACME, domain: str = DOMAIN) -> dict[str, Any]:
        """The domain added, its records published as asked, added again: verified."""
        publish(self.dns, self.refusal(org, domain)["publish"])
        return self.add(org, domain)

    def rows(self, org: str, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        with self.deps.db.transaction(org) as cur:
            return fetch_all(cur, sql, params)

    def message(self, org: str, email: str = "dana@granitepeak.example") -> str:
        """A message approved for sending: its outbox id."""
        with self.deps.db.transaction(org) as cur:
            contact = fetch_one(
                cur,
                "INSERT INTO contacts (org_id, name, email, company) VALUES (%s, 'Dana', %s,"
                " 'GP') RETURNING id",
                (org, email),
            )["id"]
            item = fetch_one(
                cur,
                "INSERT INTO approval_items (org_id, kind, source_agent, payload)"
                " VALUES (%s, 'outbound_message', 'AGT-005', '{}'::jsonb) RETURNING id",
                (org,),
            )["id"]
            return outbox.queue(
                cur,
                org,
                item,
                contact_id=contact,
                subject="Lease costs",
                body="Hi Dana,\nA thought.",
            )

    def outbox(self, org: str, outbox_id: str) -> dict[str, Any]:
        (row,) = self.rows(org, "SELECT status, send_error FROM outbox WHERE id = %s", (outbox_id,))
        return row

    def audit(self, org: str) -> list[tuple[str, str, str | None]]:
        rows = self.rows(org, "SELECT event, action, reason FROM audit_log ORDER BY id")
        return [(r["event"], r["action"], r["reason"]) for r in rows]

    def send_from(self, org: str, mail_from: str) -> None:
        limits = {"daily_cap": 100, "per_domain_hourly": 10, "mail_from": mail_from}
        body = OrgSettingsReplace.model_validate({"competitors": [], "sending": limits})
        org_admin.replace_settings(self.deps, org, body)


def _settings(
    testdb: PgDB, tmp_path: Path, dns: DnsServer, smtp: SmtpServer, **extra: str
) -> Settings:
    return Settings.from_env(
        {
            "COLONY_DB_MODE": "dsn",
            "COLONY_DB_DSN": testdb.dsn(APP_ROLE),
            "COLONY_EMBEDDING_DIM": str(testdb.dim),
            "COLONY_DATA_DIR": str(tmp_path),
            "COLONY_DNS_RESOLVER": dns.address,
            "COLONY_SPF_INCLUDE": INCLUDE,
            "COLONY_UNSUBSCRIBE_URL": "https://colony.example/unsubscribe",
            **smtp.env("Colony <outreach@colony.example>"),
            **extra,
        }
    )


@pytest.fixture
def world(testdb: PgDB, tmp_path: Path, no_ambient_config: None) -> Iterator[World]:
    db = testdb.app()
    for org in (ACME, RIVAL):
        with db.transaction(org) as cur:
            cur.execute("INSERT INTO organizations (id, name) VALUES (%s, %s)", (org, org))
    with DnsServer() as dns:
        # the receiving server reads DKIM keys from the same DNS, over the wire
        checker = DnsPythonResolver((dns.host, dns.port), timeout=2.0)
        with SmtpServer(dkim_dns=checker.txt) as smtp:
            settings = _settings(testdb, tmp_path, dns, smtp)
            secrets = FileSecrets(tmp_path / "secrets")
            transport = InlineTransport()
            sender = SmtpSender(smtp.host, smtp.port, starttls=False, timeout=10)
            deps = local_deps(settings, db, transport, sender=sender, secrets=secrets)
            yield World(testdb, deps, dns, smtp, secrets, tmp_path / "secrets", transport)


def test_a_domain_is_refused_with_what_to_publish_until_its_dns_passes(world: World) -> None:
    first = world.refusal(ACME)
    assert [p["code"] for p in first["problems"]] == [
        "spf_missing",
        "dkim_missing",
        "dmarc_missing",
    ]
    records = {r["record"]: r for r in first["publish"]}
    assert records["spf"] == {
        "record": "spf",
        "type": "TXT",
        "name": DOMAIN,
        "value": f"v=spf1 include:{INCLUDE} ~all",
        "zone": f'{DOMAIN}. 3600 IN TXT "v=spf1 include:{INCLUDE} ~all"',
    }
    (row,) = world.rows(ACME, "SELECT * FROM sending_domains")
    assert row["status"] == "pending" and row["selector"].startswith("colony")
    assert records["dkim"]["name"] == f"{row['selector']}._domainkey.{DOMAIN}"
    assert records["dkim"]["value"] == f"v=DKIM1; k=rsa; p={row['public_key']}"
    assert records["dmarc"]["name"] == f"_dmarc.{DOMAIN}"

    # asking again keeps the key: what the admin copied stays right
    assert world.refusal(ACME)["publish"] == first["publish"]
    # the private key is in the secret store, and nowhere in the database
    private = world.secrets.get(row["key_secret"])
    assert private.startswith("-----BEGIN PRIVATE KEY-----")
    body = "".join(private.splitlines()[1:-1])
    for table in ("sending_domains", "audit_log", "org_settings", "rejected_deliveries"):
        dump = json.dumps(world.testdb.owner_rows(f"SELECT * FROM {table}"), default=str)
        assert body[40:120] not in dump

    publish(world.dns, first["publish"])
    shown = world.add(ACME)
    assert shown["status"] == "verified" and shown["problems"] == []
    assert shown["verified_at"] is not None and shown["paused_at"] is None
    assert world.rows(ACME, "SELECT kind, resource_id, method FROM resource_claims") == [
        {"kind": "sending_domain", "resource_id": DOMAIN, "method": "dns_dkim"}
    ]
    assert world.audit(ACME) == [
        ("refusal", "sending_domain.add", "domain_unverified"),
        ("refusal", "sending_domain.add", "domain_unverified"),
        ("effect", "sending_domain.verified", None),
    ]
    assert world.add(ACME)["status"] == "verified"  # again: checked again, nothing new
    assert len(world.audit(ACME)) == 3
    listed = sending_domains.domains(world.deps, ACME)["domains"]
    assert [(d["domain"], d["status"]) for d in listed] == [(DOMAIN, "verified")]
    assert [r["record"] for r in listed[0]["records"]] == ["spf", "dkim", "dmarc"]


def _broken(world: World, how: str) -> None:
    selector = world.rows(ACME, "SELECT selector FROM sending_domains")[0]["selector"]
    if how == "no DKIM record":
        world.dns.remove(f"{selector}._domainkey.{DOMAIN}")
    elif how == "a wrong key":
        other = world.refusal(RIVAL, "other.example")["publish"][1]["value"]  # a key not ours
        world.dns.txt(f"{selector}._domainkey.{DOMAIN}", other)
    elif how == "SPF without the include":
        world.dns.txt(DOMAIN, spf("ip4:192.0.2.10", "include:_spf.other.test"))
    elif how == "no DMARC":
        world.dns.remove(f"_dmarc.{DOMAIN}")


@pytest.mark.parametrize(
    ("how", "code", "fix"),
    [
        ("no DKIM record", "dkim_missing", "v=DKIM1; k=rsa; p="),
        ("a wrong key", "dkim_mismatch", "v=DKIM1; k=rsa; p="),
        (
            "SPF without the include",
            "spf_no_include",
            f"v=spf1 ip4:192.0.2.10 include:_spf.other.test include:{INCLUDE} ~all",
        ),
        ("no DMARC", "dmarc_missing", "v=DMARC1; p=none"),
    ],
)
def test_each_broken_record_is_named_with_its_fix(
    world: World, how: str, code: str, fix: str
) -> None:
    publish(world.dns, world.refusal(ACME)["publish"])
    _broken(world, how)
    detail = world.refusal(ACME)
    assert [p["code"] for p in detail["problems"]] == [code]
    (record,) = detail["publish"]
    assert record["value"].startswith(fix)
    assert world.rows(ACME, "SELECT status FROM sending_domains") == [{"status": "pending"}]
    assert world.rows(ACME, "SELECT 1 FROM resource_claims") == []
    publish(world.dns, detail["publish"])
    assert world.add(ACME)["status"] == "verified"


@pytest.mark.parametrize(
    "text", ["not a domain", "ada@acme.example", "https://acme.example", "192.0.2.1", "x" * 300]
)
def test_what_is_not_a_domain_is_refused_before_dns_or_keys(world: World, text: str) -> None:
    with pytest.raises(Unprocessable, match="domain"):
        world.add(ACME, text)
    assert world.dns.queries == []
    assert world.rows(ACME, "SELECT 1 FROM sending_domains") == []
    assert not (world.secrets_dir).exists()


def test_another_orgs_domain_can_be_neither_added_nor_sent_from(world: World) -> None:
    world.verified(ACME)
    with pytest.raises(OwnedElsewhere, match="another organisation") as refused:
        world.add(RIVAL)
    assert refused.value.code == "owned_by_another_org" and ACME not in str(refused.value)
    assert world.rows(RIVAL, "SELECT 1 FROM sending_domains") == []  # no key made for it
    assert world.audit(RIVAL) == [("refusal", "sending_domain.add", "owned_by_another_org")]
    with pytest.raises(Unprocessable, match="not one of this organisation's sending domains"):
        world.send_from(RIVAL, f"Mallory <m@{DOMAIN}>")
    # a From set before (or around) that check is refused at send time, on the record
    with world.deps.db.transaction(RIVAL) as cur:
        cur.execute(
            "INSERT INTO org_settings (org_id, mail_from) VALUES (%s, %s)",
            (RIVAL, f"Mallory <m@{DOMAIN}>"),
        )
    outbox_id = world.message(RIVAL)
    result = sending.send(world.deps, RIVAL, outbox_id)
    assert result["status"] == "refused" and "another organisation" in result["reason"]
    row = world.outbox(RIVAL, outbox_id)
    assert row["status"] == "suppressed" and row["send_error"].startswith("refused: ")
    assert ("effect", "message_refused", None) in world.audit(RIVAL)
    assert world.smtp.received == []
    assert sending.send(world.deps, RIVAL, outbox_id)["duplicate"] is True  # never retried


def test_mail_from_a_verified_domain_is_signed_and_verifies_at_the_server(world: World) -> None:
    shown = world.verified(ACME)
    world.send_from(ACME, FROM)
    outbox_id = world.message(ACME)
    assert sending.send(world.deps, ACME, outbox_id)["status"] == "sent"
    (got,) = world.smtp.received
    assert got.dkim is True  # dkimpy at the receiving server, keys read from the stand-in DNS
    assert got.message["From"] == FROM and got.mail_from == f"ada@{DOMAIN}"
    signature = got.message["DKIM-Signature"]
    assert f"d={DOMAIN};" in signature and f"s={shown['selector']};" in signature
    assert "h=from : to : subject" in " ".join(signature.split())
    # the same bytes altered in transit do not verify: the verdict is the signature's
    tampered = got.raw.replace(b"A thought.", b"A better thought.")
    assert dkim_verifies(got.raw, world.resolver.txt) is True
    assert dkim_verifies(tampered, world.resolver.txt) is False


def test_a_domain_that_breaks_pauses_its_mail_until_it_passes_again(world: World) -> None:
    shown = world.verified(ACME)
    world.send_from(ACME, FROM)
    dkim_name = f"{shown['selector']}._domainkey.{DOMAIN}"
    (published,) = world.resolver.txt(dkim_name)
    world.dns.remove(dkim_name)  # someone cleaned up the DNS zone
    assert sending_domains.recheck(world.deps, world.resolver, ACME) == {
        "org_id": ACME,
        "checked": 1,
        "paused": [DOMAIN],
        "resumed": [],
    }
    (alert,) = sending_domains.alerts(world.deps, ACME)["alerts"]
    assert alert["status"] == "paused" and alert["domain"] == DOMAIN
    assert [p["code"] for p in alert["problems"]] == ["dkim_missing"]
    assert any(r["name"] == dkim_name for r in alert["records"])
    assert sending_domains.alerts(world.deps, RIVAL) == {"alerts": []}

    outbox_id = world.message(ACME)
    waiting = sending.send(world.deps, ACME, outbox_id)
    assert waiting["status"] == "deferred" and "paused" in waiting["reason"]
    assert world.outbox(ACME, outbox_id) == {"status": "queued", "send_error": None}
    (task,) = [t for t in world.transport.tasks.values() if "deferred" in t.task_id]
    assert task.delay_seconds == sending.PAUSED_DOMAIN_RETRY_SECONDS
    assert world.smtp.received == []
    # still paused on the next day's check: no second pause on the record
    assert sending_domains.recheck(world.deps, world.resolver, ACME)["paused"] == []

    world.dns.txt(dkim_name, published)
    assert sending_domains.recheck(world.deps, world.resolver, ACME)["resumed"] == [DOMAIN]
    assert sending_domains.alerts(world.deps, ACME) == {"alerts": []}
    assert sending.send(world.deps, ACME, outbox_id)["status"] == "sent"  # the deferred task
    (got,) = world.smtp.received
    assert got.dkim is True
    actions = [a for _, a, _ in world.audit(ACME) if a.startswith("sending_domain.")]
    assert actions[-3:] == [
        "sending_domain.verified",
        "sending_domain.paused",
        "sending_domain.resumed",
    ]


def test_a_dns_outage_pauses_nothing(world: World) -> None:
    shown = world.verified(ACME)
    world.dns.fail(f"{shown['selector']}._domainkey.{DOMAIN}")
    with pytest.raises(UpstreamError):  # the task is retried later
        sending_domains.recheck(world.deps, world.resolver, ACME)
    assert world.rows(ACME, "SELECT status FROM sending_domains") == [{"status": "verified"}]


def test_under_required_a_from_address_off_the_orgs_domains_is_refused(
    world: World, tmp_path: Path
) -> None:
    strict = _settings(
        world.testdb, tmp_path, world.dns, world.smtp, COLONY_SENDING_DOMAINS="required"
    )
    deps = replace(world.deps, settings=strict)
    outbox_id = world.message(ACME)  # From: the deployment's address, on no domain of ACME's
    result = sending.send(deps, ACME, outbox_id)
    assert result == {
        "outbox_id": outbox_id,
        "status": "refused",
        "reason": "the From address's domain colony.example is not a verified sending domain",
    }
    assert world.outbox(ACME, outbox_id)["send_error"] == f"refused: {result['reason']}"
    assert world.audit(ACME)[-1] == ("effect", "message_refused", None)
    assert world.smtp.received == [] and world.transport.tasks == {}
    # once the org sends from its verified domain, the same rule lets it through, signed
    world.verified(ACME)
    world.send_from(ACME, FROM)
    assert sending.send(deps, ACME, world.message(ACME))["status"] == "sent"
    assert [m.dkim for m in world.smtp.received] == [True]


def test_the_daily_schedule_rechecks_each_org_with_a_verified_domain(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    shown = world.verified(ACME)
    world.refusal(RIVAL, "rival.example")  # pending: nothing to re-check
    world.dns.remove(f"_dmarc.{DOMAIN}")
    set_deps_for_tests(world.deps)
    try:
        app = registered_app("data-lifecycle", monkeypatch)
        fired = app.post(
            "/",
            json={"task": {"kind": "schedule", "name": "domain-check"}},
            headers={"X-CloudScheduler-ScheduleTime": "2026-11-30T05:45:00Z"},
        )
        assert fired.status_code == 200 and fired.get_json()["enqueued"] == 1
        (task,) = world.transport.tasks.values()
        assert json.loads(task.body) == {"task": {"kind": "domains.check", "org_id": ACME}}
        answer = app.post("/", data=task.body, headers={"Content-Type": "application/json"})
    finally:
        set_deps_for_tests(None)
    assert answer.status_code == 200, answer.get_json()
    assert answer.get_json()["paused"] == [DOMAIN]
    assert world.rows(ACME, "SELECT status FROM sending_domains") == [{"status": "paused"}]
    assert shown["selector"]
