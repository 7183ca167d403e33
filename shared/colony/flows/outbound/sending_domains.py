"""An org's sending domains (issue 39 item 3): checked in DNS before mail goes from them, bound
to the one org that proved them, re-checked every day.

    admin ``POST /orgs/{org}/sending-domains`` {"domain"} (or ``colony org domains --add``)
        ─► ``add``: not a domain name ─► ``Unprocessable`` (422)
        ─► verified by another org ─► ``OwnedElsewhere`` (403), audited; no key is made
        ─► first time: a DKIM key pair made for this org and domain, its private key put in
           the secret store (the row keeps the secret's name), a random selector
        ─► DNS checked (``policy.sending_domains``: SPF includes the relay, our DKIM key at our
           selector, DMARC) ─► passes: bound to the org (``store.claims``), ``verified``
        ─► fails: ``DomainUnverified`` (422) naming each problem and the TXT records to
           publish, audited; the domain stays ``pending`` with its key, and adding it again
           checks again
    the ``domain-check`` schedule, daily ─► ``recheck``: each domain that passed once is
        checked again; one that fails is ``paused`` (its mail waits, nothing is dropped) and
        raises an alert on /overview (``alerts``); one that passes again is ``verified``
    a send (``flows.outbound.sending``) ─► ``sender``: its From address's domain must be a
        verified domain of this org (sign with its key), a paused one (wait), or, only where
        ``COLONY_SENDING_DOMAINS=optional``, a domain no org verified (unsigned); another
        org's domain, or any other domain under ``required``, is refused and recorded

The proof that a domain is the org's is the DKIM record: the key is made for this org, so
only someone who controls the domain's DNS can publish it. A domain another org verified
cannot be added nor sent from; a pending domain binds no one (two orgs may try; the first
whose key is published wins it).
"""

from __future__ import annotations

import hashlib
import secrets as random
from dataclasses import dataclass
from email.utils import parseaddr
from typing import Any, Literal

from colony.errors import (
    ConfigError,
    DomainUnverified,
    NotFound,
    OwnedElsewhere,
    Unprocessable,
    ValidationFailed,
)
from colony.flows.deps import FlowDeps
from colony.policy import sending_domains as rules
from colony.ports import DkimKey, DnsResolver, SecretStore
from colony.runtime.dkim_keys import new_key
from colony.store import claims, orgdata
from colony.store.approvals import audit
from colony.store.outbound import sending_domains as repo

KIND = "sending_domain"  # its kind in resource_claims
METHOD = "dns_dkim"
SYSTEM = "system"


def _include(deps: FlowDeps) -> str:
    include = deps.settings.spf_include
    if not include:
        raise ConfigError(
            "COLONY_SPF_INCLUDE is required to check sending domains: the domain the relay's"
            " SPF record is published at (e.g. _spf.google.com)"
        )
    return include


def secret_name(org_id: str, domain: str, selector: str) -> str:
    """The secret id of one DKIM private key: one per key (a new key, a new name), naming
    neither org nor domain."""
    digest = hashlib.sha256(f"{org_id}\n{domain}\n{selector}".encode()).hexdigest()[:40]
    return f"colony-dkim-{digest}"


def _shown(row: Any, include: str | None) -> dict[str, Any]:
    """A domain as an admin sees it: its state, the last check's problems, and the records
    it must publish (SPF as a new record would read; an existing one gains the include)."""
    name = rules.dkim_name(row["selector"], row["domain"])
    wanted = [
        rules.Record("dkim", name, rules.dkim_record(row["public_key"])),
        rules.Record("dmarc", f"_dmarc.{row['domain']}", rules.DMARC_RECORD),
    ]
    if include:
        wanted.insert(0, rules.Record("spf", row["domain"], f"v=spf1 include:{include} ~all"))
    return {
        "domain": row["domain"],
        "status": row["status"],
        "selector": row["selector"],
        "problems": list(row["problems"]),
        "records": [record.as_dict() for record in wanted],
        "checked_at": _iso(row["checked_at"]),
        "verified_at": _iso(row["verified_at"]),
        "paused_at": _iso(row["paused_at"]),
    }


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def domains(deps: FlowDeps, org_id: str) -> dict[str, Any]:
    """The org's sending domains, each with what it must publish."""
    with deps.db.transaction(org_id) as cur:
        if not orgdata.org_exists(cur, org_id):
            raise NotFound(f"org {org_id!r} does not exist")
        rows = repo.listing(cur)
    include = deps.settings.spf_include
    return {"domains": [_shown(row, include) for row in rows]}


def add(
    deps: FlowDeps,
    dns: DnsResolver,
    secrets: SecretStore,
    org_id: str,
    text: str,
    actor: str,
) -> dict[str, Any]:
    """Add ``text`` as one of the org's sending domains (again: check it again); the domain
    as ``domains`` shows it once it passes, ``DomainUnverified`` naming what to publish
    while it does not."""
    try:
        domain = rules.domain_name(text)
    except ValidationFailed as error:
        raise Unprocessable(f"domain: {error}") from None
    include = _include(deps)
    with deps.db.transaction(org_id) as cur:
        if not orgdata.org_exists(cur, org_id):  # (nor could its refusal be audited)
            raise NotFound(f"org {org_id!r} does not exist")
        elsewhere = claims.claimed_elsewhere(cur, org_id, KIND, domain)
    if elsewhere:
        _refuse(deps, org_id, domain, actor, OwnedElsewhere.code)
        raise OwnedElsewhere(f"{domain} is already a sending domain of another organisation")
    row = _keyed(deps, secrets, org_id, domain, actor)
    verdict = rules.check(domain, row["selector"], row["public_key"], include, dns.txt)
    if not verdict.ok:
        problems = [p.as_dict() for p in verdict.problems]
        with deps.db.transaction(org_id) as cur:
            _failed(cur, org_id, row, problems, actor, "admin")
        _refuse(deps, org_id, domain, actor, DomainUnverified.code, problems)
        raise DomainUnverified(domain, problems, [r.as_dict() for r in verdict.publish])
    with deps.db.transaction(org_id) as cur:
        held = claims.claim(cur, org_id, KIND, domain, METHOD, actor)
        if held is claims.Claim.OURS:
            _passed(cur, org_id, row, actor, "admin")
            row = repo.get(cur, domain)
    if held is claims.Claim.ELSEWHERE:  # another org's key was published first, meanwhile
        _refuse(deps, org_id, domain, actor, OwnedElsewhere.code)
        raise OwnedElsewhere(f"{domain} is already a sending domain of another organisation")
    return _shown(row, include)


def _keyed(deps: FlowDeps, secrets: SecretStore, org_id: str, domain: str, actor: str) -> Any:
    """The org's row for ``domain``, made with a fresh key pair the first time: the private
    key goes to the secret store inside the row's transaction, so a row never names a
    secret that was not written (a key written for a row that then failed is an orphan of
    a name nothing will ask for)."""
    with deps.db.transaction(org_id) as cur:
        row = repo.get(cur, domain)
        if row is not None:
            return row
        key = new_key()
        selector = f"{rules.SELECTOR_PREFIX}{random.token_hex(4)}"
        name = secret_name(org_id, domain, selector)
        if repo.add(cur, org_id, domain, selector, key.public_key, name, actor):
            secrets.put(name, key.private_pem)
        return repo.get(cur, domain)  # ours, or a concurrent add's (it committed first)


def _passed(cur: Any, org_id: str, row: Any, actor: str, channel: audit.Channel) -> None:
    repo.record(cur, row["domain"], "verified", [])
    if row["status"] != "verified":
        action = (
            "sending_domain.resumed" if row["status"] == "paused" else "sending_domain.verified"
        )
        detail = {"domain": row["domain"], "selector": row["selector"]}
        audit.append(cur, org_id, audit.Entry("effect", actor, channel, action, detail=detail))


def _failed(
    cur: Any,
    org_id: str,
    row: Any,
    problems: list[dict[str, str]],
    actor: str,
    channel: audit.Channel,
) -> None:
    """A check that did not pass: a pending domain stays pending; one that passed once is
    paused (its mail waits), the pause on the audit log when it is new."""
    status: repo.Status = "pending" if row["status"] == "pending" else "paused"
    repo.record(cur, row["domain"], status, problems)
    if row["status"] == "verified":
        detail = {"domain": row["domain"], "problems": [p["code"] for p in problems]}
        entry = audit.Entry("effect", actor, channel, "sending_domain.paused", detail=detail)
        audit.append(cur, org_id, entry)


def recheck(deps: FlowDeps, dns: DnsResolver, org_id: str) -> dict[str, Any]:
    """Check every domain of the org that passed once: a failing one is paused (its mail
    waits) and audited, a passing paused one resumes. A DNS failure (``UpstreamError``)
    raises, so the task is retried later: an outage pauses nothing."""
    include = _include(deps)
    with deps.db.transaction(org_id) as cur:
        rows = repo.rechecked(cur)
    paused: list[str] = []
    resumed: list[str] = []
    for row in rows:
        verdict = rules.check(row["domain"], row["selector"], row["public_key"], include, dns.txt)
        with deps.db.transaction(org_id) as cur:
            if verdict.ok:
                _passed(cur, org_id, row, SYSTEM, "system")
                if row["status"] == "paused":
                    resumed.append(row["domain"])
                continue
            _failed(cur, org_id, row, [p.as_dict() for p in verdict.problems], SYSTEM, "system")
            if row["status"] == "verified":
                paused.append(row["domain"])
    return {"org_id": org_id, "checked": len(rows), "paused": paused, "resumed": resumed}


def alerts(deps: FlowDeps, org_id: str) -> dict[str, Any]:
    """What /overview raises: each paused domain, why, and what to publish to mend it."""
    with deps.db.transaction(org_id) as cur:
        rows = repo.paused(cur)
    include = deps.settings.spf_include
    return {
        "alerts": [
            {
                "kind": "sending_domain_paused",
                "message": f"Mail from {row['domain']} is paused: its DNS no longer passes."
                " Messages from it wait and go once it passes again.",
                **_shown(row, include),
            }
            for row in rows
        ]
    }


# ─── sending ─────────────────────────────────────────────────────────────────────────────


@dataclass(frozen=True, slots=True)
class FromDomain:
    """What a send may do with its From address's domain: ``sign`` (with ``secret``'s key
    under ``selector``), go ``unsigned``, ``wait`` (the domain is paused) or be ``refused``."""

    action: Literal["sign", "unsigned", "wait", "refuse"]
    domain: str
    reason: str = ""
    selector: str = ""
    secret: str = ""


def sender(cur: Any, org_id: str, mail_from: str, mode: str) -> FromDomain:
    """The verdict on ``mail_from`` for this org (the cursor is the org's)."""
    domain = parseaddr(mail_from)[1].rpartition("@")[2].lower().rstrip(".")
    row = repo.get(cur, domain) if domain else None
    if row is not None and row["status"] == "verified" and claims.held(cur, KIND, domain):
        return FromDomain("sign", domain, selector=row["selector"], secret=row["key_secret"])
    if row is not None and row["status"] == "paused":
        why = f"{domain} is paused: its DNS no longer passes (see /overview)"
        return FromDomain("wait", domain, why)
    if domain and claims.claimed_elsewhere(cur, org_id, KIND, domain):
        why = f"{domain} is another organisation's sending domain"
        return FromDomain("refuse", domain, why)
    if mode == "required":
        why = f"the From address's domain {domain or '(none)'} is not a verified sending domain"
        return FromDomain("refuse", domain, why)
    return FromDomain("unsigned", domain)


def signing_key(secrets: SecretStore, verdict: FromDomain) -> DkimKey:
    """The key a ``sign`` verdict signs with, from the secret store."""
    try:
        private = secrets.get(verdict.secret)
    except NotFound:
        raise ConfigError(
            f"the DKIM key of {verdict.domain} is missing from the secret store"
            f" ({verdict.secret}); add the domain again to make a new one"
        ) from None
    return DkimKey(verdict.domain, verdict.selector, private)


def _refuse(
    deps: FlowDeps,
    org_id: str,
    domain: str,
    actor: str,
    reason: str,
    problems: list[dict[str, str]] | None = None,
) -> None:
    """The refusal on the org's audit log, in a transaction of its own."""
    detail: dict[str, Any] = {"resource": KIND, "domain": domain}
    if problems:
        detail["problems"] = [p["code"] for p in problems]
    entry = audit.Entry(
        "refusal", actor, "admin", "sending_domain.add", reason=reason, detail=detail
    )
    with deps.db.transaction(org_id) as cur:
        audit.append(cur, org_id, entry)
