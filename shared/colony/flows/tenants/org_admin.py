"""An org's admins read and replace what shapes its outbound: the ICP definition (ENT-010),
the sequence library (ENT-004) and the org's settings (competitors for CONST-006, sending
limits, research, the monthly budget). Called by the admin API and the CLI alike, with a body
already parsed into its contract (``colony.contracts.admin``); the caller has checked who may.

Every replace is on the audit log in the transaction that makes it, as its ``actor``'s, on
the ``channel`` it came by (``admin``: the admin API; ``ui``: /overview's Setup view;
``system``: the operator's CLI). A rule the contract cannot judge alone (an anti-ICP rule's
semantics, a From address's domain) is ``FieldsInvalid`` naming its field.
"""

from __future__ import annotations

from collections.abc import Sequence
from email.utils import parseaddr
from typing import Any

from colony.contracts.admin import IcpReplace, OrgSettingsReplace, SequenceLibrary
from colony.errors import FieldsInvalid, NotFound
from colony.flows.deps import FlowDeps
from colony.flows.tenants import budget
from colony.flows.tenants.budget import money
from colony.policy.anti_icp import validate_rules
from colony.store import orgdata
from colony.store.approvals import audit
from colony.store.outbound import sending_domains
from colony.store.tenants import org_admin

# What an org without an ``org_settings`` row has (the column defaults of migration 0018).
DEFAULT_SETTINGS: dict[str, Any] = {
    "competitors": [],
    "sending": {"daily_cap": 200, "per_domain_hourly": 5, "sequence_approval": "each_step"},
    "research": {"enabled": True},
    "budget": {"monthly_usd": None, "alert_share": 0.8, "hard_cap": True},
}


def _org(cur: Any, org_id: str) -> None:
    if not orgdata.org_exists(cur, org_id):
        raise NotFound(f"org {org_id!r} does not exist")


def icp(deps: FlowDeps, org_id: str) -> dict[str, Any]:
    with deps.db.transaction(org_id) as cur:
        _org(cur, org_id)
        row = org_admin.icp(cur)
    if row is None:
        return {"version": None, "icp": None}
    version = row.pop("version")
    row.pop("created_at")
    return {"version": version, "icp": row}


def _audited(
    cur: Any, org_id: str, actor: str, channel: audit.Channel, what: str, detail: dict[str, Any]
) -> None:
    entry = audit.Entry("decision", actor, channel, f"{what}.replace", detail=detail)
    audit.append(cur, org_id, entry)


def replace_icp(
    deps: FlowDeps,
    org_id: str,
    definition: IcpReplace,
    *,
    actor: str = "system",
    channel: audit.Channel = "system",
) -> dict[str, Any]:
    """Write a new ICP version; an impossible anti-ICP rule is ``FieldsInvalid``."""
    body = definition.model_dump(mode="json", exclude_none=True)  # a "missing" rule has no value
    try:
        validate_rules(body["anti_icp_rules"])
    except FieldsInvalid as error:
        raise error.under("anti_icp_rules") from None
    with deps.db.transaction(org_id) as cur:
        _org(cur, org_id)
        version = org_admin.replace_icp(cur, org_id, body)
        detail = {"version": version, "anti_icp_rules": len(body["anti_icp_rules"])}
        _audited(cur, org_id, actor, channel, "icp", detail)
    return {"version": version, "icp": body}


def sequences(deps: FlowDeps, org_id: str) -> dict[str, Any]:
    with deps.db.transaction(org_id) as cur:
        _org(cur, org_id)
        rows = org_admin.sequence_steps(cur)
    library: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:
        key = (str(row["angle"]), str(row["tier"]))
        entry = library.setdefault(
            key,
            {"name": row["name"] or f"{key[0]} {key[1]}", "angle": key[0], "tier": key[1]},
        )
        entry.setdefault("steps", []).append(
            {
                "channel": row["channel"],
                "delay_days": row["delay_days"],
                "guidance": row["guidance"],
            }
        )
    return {"sequences": list(library.values())}


def replace_sequences(
    deps: FlowDeps,
    org_id: str,
    library: SequenceLibrary,
    *,
    actor: str = "system",
    channel: audit.Channel = "system",
) -> dict[str, Any]:
    body = library.model_dump(mode="json")
    with deps.db.transaction(org_id) as cur:
        _org(cur, org_id)
        steps = org_admin.replace_sequences(cur, org_id, body["sequences"])
        detail = {"sequences": len(body["sequences"]), "steps": steps}
        _audited(cur, org_id, actor, channel, "sequences", detail)
    return {**body, "steps": steps}


def settings(deps: FlowDeps, org_id: str) -> dict[str, Any]:
    with deps.db.transaction(org_id) as cur:
        _org(cur, org_id)
        row = org_admin.settings(cur)
    if row is None:
        return dict(DEFAULT_SETTINGS)
    sending = {
        "daily_cap": row["daily_send_cap"],
        "per_domain_hourly": row["per_domain_hourly_cap"],
        "sequence_approval": row["sequence_approval"],
    }
    if row["mail_from"]:
        sending["mail_from"] = row["mail_from"]
    return {
        "competitors": list(row["competitors"]),
        "sending": sending,
        "research": {"enabled": bool(row["research_enabled"])},
        "budget": {
            "monthly_usd": money(row["budget_monthly_usd"]),
            "alert_share": float(row["budget_alert_share"]),
            "hard_cap": bool(row["budget_hard_cap"]),
        },
    }


def replace_settings(
    deps: FlowDeps,
    org_id: str,
    update: OrgSettingsReplace,
    *,
    actor: str = "system",
    channel: audit.Channel = "system",
) -> dict[str, Any]:
    """Replace the org's settings; a From address must be on one of the org's sending
    domains (added, if not yet passing: a send from it waits or is refused until it does);
    a budget that no longer holds campaign work back has what it held published again
    (``budget.release_soon``)."""
    mail_from, spend = update.sending.mail_from, update.budget
    with deps.db.transaction(org_id) as cur:
        _org(cur, org_id)
        if mail_from is not None:
            domain = parseaddr(mail_from)[1].rpartition("@")[2].lower().rstrip(".")
            if sending_domains.get(cur, domain) is None:
                why = (
                    f"{domain} is not one of this organisation's sending domains; add it"
                    " first (POST /orgs/{org}/sending-domains)"
                )
                field = {"field": "sending.mail_from", "message": why}
                raise FieldsInvalid(f"sending.mail_from: {why}", [field])
        org_admin.replace_settings(
            cur,
            org_id,
            list(update.competitors),
            update.sending.daily_cap,
            update.sending.per_domain_hourly,
            update.sending.sequence_approval,
            update.research.enabled,
            mail_from,
            budget=(spend.monthly_usd, spend.alert_share, spend.hard_cap),
        )
        _audited(cur, org_id, actor, channel, "settings", update.model_dump(mode="json"))
    budget.release_soon(deps, org_id)
    return settings(deps, org_id)  # as kept (the budget in cents)


# The demo org's competitors: what CONST-006 keeps out when an org has named none itself.
DEFAULT_COMPETITORS = ("CareSpace Analytics", "FacilityIQ", "LeaseLogic Health")


def competitors(deps: FlowDeps, org_id: str, fallback: Sequence[str]) -> list[str]:
    """The names CONST-006 keeps out of outbound text: the org's own list (its settings) and
    those tagged on its KC-06 documents; ``fallback`` only when neither names any."""
    with deps.db.transaction(org_id) as cur:
        row = org_admin.settings(cur)
    own = [str(name) for name in (row["competitors"] if row else [])]
    known = {name.lower() for name in own}
    tagged = deps.knowledge.tag_values(org_id, "KC-06", "competitors")
    names = own + [name for name in tagged if name.lower() not in known]
    return names or list(fallback)
