"""An org's HubSpot connection (issue 36 item 1): OAuth in, tokens kept and refreshed, paused
when HubSpot refuses them, disconnected on request.

    admin ``POST /orgs/{org}/crm/hubspot/connect`` ─► ``start``: a random ``state``, its
        SHA-256 kept with the org and the person (10 minutes), the authorize URL with it
    the person allows the app at HubSpot ─► HubSpot sends their browser to our page with
        ``code`` and ``state`` ─► the page posts both, with the person's own session token,
    admin ``POST /orgs/{org}/crm/hubspot/callback`` ─► ``complete``: the state spent (one
        DELETE under the org's RLS: another org's state is not found at all), the same
        person, not expired ─► the code exchanged ─► whose the token is (the portal) ─► the
        portal claimed for the org (``store.claims``: one org per portal, since HubSpot's
        webhooks name only the portal) ─► tokens into Secret Manager (the row keeps the
        secret's name) ─► connected

Every refusal (unknown, spent or expired state, another person, a code HubSpot refuses, a
portal another org holds) is on the org's audit log, in a transaction of its own, and
changes nothing else; a portal held elsewhere has its fresh tokens revoked at once.

Tokens. The secret holds the access and refresh tokens and the access token's expiry.
``access_token`` hands out the access token while it has more than ``REFRESH_MARGIN`` left,
else refreshes it first under the row's lock (two instances take turns; the second finds it
fresh). A refresh token HubSpot refuses (revoked, the app uninstalled) pauses the
connection (``pause``): status ``paused`` with the reason, on the audit log, nothing deleted,
and every later call answers ``ConnectionPaused`` until an admin reconnects (``outgoing.complete``
then queues again what waited meanwhile). ``with_client`` does the same for a CRM call
whose token HubSpot refuses.

Disconnect revokes the refresh token at HubSpot, deletes the secret, releases the portal and
marks the row ``disconnected``; what it did is in its answer (``stopped``).
"""

from __future__ import annotations

import hashlib
import json
import secrets as random_tokens
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, TypeVar

from colony.contracts.admin import CrmCallback
from colony.errors import (
    ConfigError,
    ConnectionPaused,
    CrmAccessRefused,
    Forbidden,
    NotFound,
    OwnedElsewhere,
    ProviderUnavailable,
)
from colony.flows.deps import FlowDeps
from colony.ports import CrmAuthorizer, CrmClient, CrmTokens, SecretStore
from colony.store import claims, orgdata
from colony.store.approvals import audit
from colony.store.crm import connections as repo
from colony.store.crm import records

T = TypeVar("T")
PROVIDER = "hubspot"
KIND = "hubspot_portal"  # resource_claims kind
STATE_TTL = timedelta(minutes=10)
REFRESH_MARGIN = timedelta(minutes=5)
# How a flow gets a CRM client from an access token (production: the HubSpot adapter).
Connector = Callable[[str], CrmClient]


def secret_name(org_id: str) -> str:
    """The Secret Manager id of an org's HubSpot tokens (naming neither org nor portal)."""
    digest = hashlib.sha256(f"{PROVIDER}\n{org_id}".encode()).hexdigest()[:40]
    return f"colony-crm-{digest}"


def _hash(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()


def _redirect_uri(deps: FlowDeps) -> str:
    uri = deps.settings.hubspot_redirect_uri
    if not uri:
        raise ConfigError("COLONY_HUBSPOT_REDIRECT_URI must be set to connect HubSpot")
    return uri


def start(deps: FlowDeps, auth: CrmAuthorizer, org_id: str, user_id: str) -> dict[str, Any]:
    """Begin a connection: the URL to send the person to, valid ``STATE_TTL``."""
    # hex, not URL-safe base64: a state starting with '-' reads as an option to the CLI
    state = random_tokens.token_hex(32)
    expires = deps.clock() + STATE_TTL
    redirect = _redirect_uri(deps)
    with deps.db.transaction(org_id) as cur:
        if not orgdata.org_exists(cur, org_id):
            raise NotFound(f"org {org_id!r} does not exist")
        repo.add_state(cur, org_id, _hash(state), PROVIDER, user_id, expires, deps.clock())
    return {"authorize_url": auth.authorize_url(state, redirect), "expires_at": expires.isoformat()}


def complete(
    deps: FlowDeps,
    secrets: SecretStore,
    auth: CrmAuthorizer,
    org_id: str,
    user_id: str,
    body: CrmCallback,
) -> dict[str, Any]:
    """Finish the connection the state began; refusals audited (module docstring)."""
    with deps.db.transaction(org_id) as cur:
        state = _hash(body.state.get_secret_value())
        flow = repo.spend_state(cur, state, PROVIDER, deps.clock())
    if flow is None or flow["user_id"] != user_id or flow["expired"]:
        reason = "unknown_state" if flow is None else "expired_state"
        if flow is not None and flow["user_id"] != user_id:
            reason = "another_person"
        _audit(deps, org_id, user_id, "refusal", reason)
        raise Forbidden(
            "this HubSpot sign-in was not begun by you in this organisation, was already used,"
            " or expired: start connecting HubSpot again"
        )
    try:
        tokens = auth.exchange_code(body.code.get_secret_value(), _redirect_uri(deps))
        account = auth.account(tokens.access_token)
    except CrmAccessRefused as refused:
        _audit(deps, org_id, user_id, "refusal", f"hubspot_refused:{refused.reason}")
        raise Forbidden("HubSpot refused the sign-in: start connecting HubSpot again") from None
    missing = sorted(set(auth.scopes) - {"oauth"} - set(account.scopes))
    held = None
    with deps.db.transaction(org_id) as cur:
        if not missing:
            held = claims.claim(cur, org_id, KIND, account.account_id, "oauth", user_id)
        if held is claims.Claim.OURS:
            previous = repo.get(cur, PROVIDER)
            if previous and previous["account_id"] != account.account_id:
                claims.release(cur, KIND, str(previous["account_id"]))
            expires = deps.clock() + timedelta(seconds=tokens.expires_in)
            name = secret_name(org_id)
            repo.connect(
                cur, org_id, PROVIDER, account.account_id, name, account.scopes, expires, user_id
            )
            # Inside the transaction: if the tokens cannot be stored, nothing is connected.
            secrets.put(name, _secret(tokens, expires))
    if held is not claims.Claim.OURS:
        auth.revoke(tokens.refresh_token)  # ours to give back: this org will not use them
        reason = "missing_scopes" if missing else "owned_by_another_org"
        _audit(deps, org_id, user_id, "refusal", reason, account=account.account_id)
        if missing:
            raise Forbidden(f"HubSpot did not grant the scopes {', '.join(missing)}")
        raise OwnedElsewhere(
            f"HubSpot portal {account.account_id!r} is already connected to another organisation"
        )
    _audit(deps, org_id, user_id, "effect", None, account=account.account_id, action="connect")
    return status(deps, org_id)


def _secret(tokens: CrmTokens, expires: datetime) -> str:
    return json.dumps(
        {
            "access_token": tokens.access_token,
            "refresh_token": tokens.refresh_token,
            "expires_at": expires.isoformat(),
        }
    )


def access_token(deps: FlowDeps, secrets: SecretStore, auth: CrmAuthorizer, org_id: str) -> str:
    """The org's HubSpot access token, refreshed first when it is near its expiry.
    ``NotFound`` if HubSpot is not connected, ``ConnectionPaused`` if it is paused (or
    becomes so here: HubSpot refused the refresh token)."""
    refused: CrmAccessRefused | None = None
    with deps.db.transaction(org_id) as cur:
        row = repo.get(cur, PROVIDER, for_refresh=True)
        _usable(row)
        assert row is not None
        stored = json.loads(secrets.get(str(row["secret_name"])))
        if datetime.fromisoformat(stored["expires_at"]) - deps.clock() > REFRESH_MARGIN:
            return str(stored["access_token"])
        try:
            tokens = auth.refresh(str(stored["refresh_token"]))
        except CrmAccessRefused as error:
            refused = error
        else:
            expires = deps.clock() + timedelta(seconds=tokens.expires_in)
            secrets.put(str(row["secret_name"]), _secret(tokens, expires))
            repo.refreshed(cur, PROVIDER, expires)
            return tokens.access_token
    reason = f"HubSpot refused the refresh token ({refused.reason or 'revoked'})"
    pause(deps, org_id, reason)
    raise ConnectionPaused(f"HubSpot is paused for this organisation: {reason}; reconnect it")


def _usable(row: Any) -> None:
    if row is None or row["status"] == "disconnected":
        raise NotFound("HubSpot is not connected to this organisation")
    if row["status"] == "paused":
        raise ConnectionPaused(
            f"HubSpot is paused for this organisation: {row['paused_reason']}; reconnect it"
        )


def with_client(
    deps: FlowDeps,
    secrets: SecretStore,
    auth: CrmAuthorizer,
    connect: Connector,
    org_id: str,
    work: Callable[[CrmClient], T],
) -> T:
    """``work`` with the org's CRM client. A token HubSpot refuses pauses the connection and
    raises ``ConnectionPaused``; the caller's input is untouched (nothing is lost: a task
    that gets it is kept for when the org reconnects)."""
    client = connect(access_token(deps, secrets, auth, org_id))
    try:
        return work(client)
    except CrmAccessRefused as refused:
        reason = f"HubSpot refused the access token ({refused.reason or 'revoked'})"
        pause(deps, org_id, reason)
        raise ConnectionPaused(
            f"HubSpot is paused for this organisation: {reason}; reconnect it"
        ) from None


def pause(deps: FlowDeps, org_id: str, reason: str) -> bool:
    """Pause the org's connection with ``reason`` (audited); False if it was not connected."""
    with deps.db.transaction(org_id) as cur:
        paused = repo.pause(cur, PROVIDER, reason[:300])
        if paused:
            entry = audit.Entry(
                event="effect",
                actor="system",
                channel="system",
                action="crm.pause",
                reason=reason[:300],
                detail={"resource": KIND},
            )
            audit.append(cur, org_id, entry)
    return paused


def disconnect(
    deps: FlowDeps, secrets: SecretStore, auth: CrmAuthorizer, org_id: str, user_id: str
) -> dict[str, Any]:
    """Stop everything: the refresh token revoked at HubSpot, the secret deleted, the portal
    released, the row disconnected. The answer says what was done."""
    with deps.db.transaction(org_id) as cur:
        row = repo.get(cur, PROVIDER)
    if row is None or row["status"] == "disconnected":
        return {"provider": PROVIDER, "status": "disconnected", "stopped": []}
    name, account = str(row["secret_name"]), str(row["account_id"])
    stopped = []
    try:
        stored = json.loads(secrets.get(name))
        auth.revoke(str(stored["refresh_token"]))
        stopped.append("the app's access to the HubSpot portal was revoked")
    except NotFound:
        pass  # no tokens left to revoke
    except ProviderUnavailable:
        stopped.append(
            "HubSpot could not be reached to revoke the app's access: its tokens are deleted"
            " here, and the app can be removed in the portal's HubSpot settings"
        )
    with deps.db.transaction(org_id) as cur:
        repo.disconnect(cur, PROVIDER)
        claims.release(cur, KIND, account)
        secrets.delete(name)
    stopped += [
        "the tokens were deleted from Secret Manager",
        "nothing more is read from or written to HubSpot for this organisation",
    ]
    _audit(deps, org_id, user_id, "effect", None, account=account, action="disconnect")
    return {
        "provider": PROVIDER,
        "account_id": account,
        "status": "disconnected",
        "stopped": stopped,
    }


def status(deps: FlowDeps, org_id: str) -> dict[str, Any]:
    """The org's HubSpot connection as an admin sees it (never a token)."""
    with deps.db.transaction(org_id) as cur:
        row = repo.get(cur, PROVIDER)
        waiting = records.unmapped(cur, PROVIDER)
    if row is None:
        return {"provider": PROVIDER, "status": "not_connected"}
    keys = ("account_id", "status", "paused_reason", "scopes", "access_expires_at")
    answer = {"provider": PROVIDER} | {k: row[k] for k in keys}
    answer |= {"connected_by": row["connected_by"], "connected_at": row["connected_at"]}
    answer |= {"synced_through": row["synced_through"]}
    # deals kept in a HubSpot stage with no mapping, for an admin to map (flows.crm.stages)
    answer["unmapped_stages"] = [
        {"stage": str(r["unmapped_stage"]), "deals": int(r["deals"])} for r in waiting
    ]
    return {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in answer.items()}


def _audit(
    deps: FlowDeps,
    org_id: str,
    actor: str,
    event: audit.Event,
    reason: str | None,
    *,
    account: str | None = None,
    action: str = "connect",
) -> None:
    """On the org's audit log, in a transaction of its own (never a token or a state)."""
    detail: dict[str, Any] = {"resource": KIND}
    if account:
        detail["account_id"] = account
    entry = audit.Entry(
        event=event,
        actor=actor,
        channel="admin",
        action=f"crm.{action}",
        reason=reason,
        detail=detail,
    )
    with deps.db.transaction(org_id) as cur:
        audit.append(cur, org_id, entry)
