"""A sender mailbox's OAuth grant (issue 39 item 2): the org's own Google Workspace or
Microsoft 365 mailbox connected, its tokens kept and refreshed, revoked when the provider
refuses them, disconnected on request. The same shape as the CRM's connection
(``flows.crm.connections``), per mailbox.

    admin ``POST /orgs/{org}/mailboxes/{id}/connect`` ─► ``start``: a random ``state``, its
        SHA-256 kept with the org, the mailbox and the person (10 minutes), the provider's
        authorize URL (``login_hint``: the mailbox's address)
    the person consents ─► the provider sends their browser back with ``code`` and
        ``state`` ─► our page posts both with the person's own session:
    admin ``POST /orgs/{org}/mailboxes/{id}/callback`` ─► ``complete``: the state spent (one
        DELETE under the org's RLS: another org's state is not found), the same person and
        mailbox, not expired ─► the code exchanged ─► the grant's account must BE the
        mailbox's address (the proof the org holds it; its domain is already the org's,
        verified in DNS) ─► tokens into the secret store under a new name per connection ─►
        ``connected``; what waited for the mailbox is handed back to the send queue

A refusal (unknown, spent or expired state, another person, a code the provider refuses,
a grant for another account) is on the audit log, changes nothing, and gives a grant for
the wrong account straight back to the provider.

Tokens. ``access_token`` hands out the access token while it has more than
``REFRESH_MARGIN`` left, else refreshes it under the mailbox row's lock (two instances
take turns; the second finds it fresh). ``send`` sends with it; a 401 at send refreshes
once and tries again. A refresh the provider refuses (``GrantRefused``: revoked, the app
removed) marks the grant ``revoked`` with the reason (audited); the message waits, as every
later one of that mailbox does, until an admin connects it again.
"""

from __future__ import annotations

import hashlib
import json
import secrets as random_tokens
from datetime import datetime, timedelta
from typing import Any

from colony.contracts.mailboxes import MailboxCallback
from colony.errors import (
    ConfigError,
    Forbidden,
    GrantRefused,
    NotFound,
    ProviderUnavailable,
    Unprocessable,
)
from colony.flows.deps import FlowDeps
from colony.flows.outbound.send_queue import schedule_send
from colony.ports import Mail, MailboxApi, MailboxTokens, SecretStore, SentRef
from colony.store.approvals import audit
from colony.store.db import Row
from colony.store.outbound import mailboxes as repo

STATE_TTL = timedelta(minutes=10)
REFRESH_MARGIN = timedelta(minutes=5)


def secret_name(org_id: str, mailbox_id: str, nonce: str) -> str:
    """The secret id of one connection's tokens (a new connection, a new name: a warm
    instance's cached copy of the old tokens can never be taken for the new ones)."""
    digest = hashlib.sha256(f"{org_id}\n{mailbox_id}\n{nonce}".encode()).hexdigest()[:40]
    return f"colony-mailbox-{digest}"


def _hash(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()


def _redirect(deps: FlowDeps) -> str:
    uri = deps.settings.mailbox_apps.redirect_uri
    if not uri:
        raise ConfigError("COLONY_MAILBOX_REDIRECT_URI must be set to connect mailboxes")
    return uri


def _api(apis: Any, row: Row) -> MailboxApi:
    kind = row["kind"]
    if kind == "provider":
        raise Unprocessable(f"{row['address']} sends through the relay: it has no grant")
    api = apis.get(kind) if apis is not None else None
    if api is None:
        raise ConfigError(f"no OAuth app is configured for {kind} mailboxes")
    return api


def start(deps: FlowDeps, apis: Any, org_id: str, mailbox_id: str, user_id: str) -> dict[str, Any]:
    """Begin connecting a mailbox: the URL to send the person to, valid ``STATE_TTL``."""
    state = random_tokens.token_hex(32)  # hex: never read as a CLI option
    expires = deps.clock() + STATE_TTL
    with deps.db.transaction(org_id) as cur:
        row = _row(cur, mailbox_id)
        api = _api(apis, row)
        repo.add_state(cur, org_id, _hash(state), mailbox_id, user_id, expires, deps.clock())
    url = api.authorize_url(state, _redirect(deps), row["address"])
    return {"authorize_url": url, "expires_at": expires.isoformat()}


def complete(
    deps: FlowDeps,
    secrets: SecretStore,
    apis: Any,
    org_id: str,
    mailbox_id: str,
    user_id: str,
    body: MailboxCallback,
) -> dict[str, Any]:
    """Finish the connection the state began; refusals audited (module docstring)."""
    with deps.db.transaction(org_id) as cur:
        flow = repo.spend_state(cur, _hash(body.state.get_secret_value()), deps.clock())
        row = _row(cur, mailbox_id)
    api = _api(apis, row)
    if flow is None or flow["expired"] or flow["user_id"] != user_id:
        reason = "unknown_state" if flow is None else "expired_state"
        if flow is not None and flow["user_id"] != user_id:
            reason = "another_person"
        _audit(deps, org_id, user_id, "refusal", "connect", mailbox_id, reason)
        raise Forbidden(
            "this sign-in was not begun by you for this mailbox, was already used, or"
            " expired: start connecting the mailbox again"
        )
    if flow["mailbox_id"] != mailbox_id:
        _audit(deps, org_id, user_id, "refusal", "connect", mailbox_id, "another_mailbox")
        raise Forbidden("this sign-in was begun for another mailbox: start again from this one")
    try:
        tokens = api.exchange_code(body.code.get_secret_value(), _redirect(deps))
        account = api.address(tokens.access_token)
    except GrantRefused as refused:
        _audit(deps, org_id, user_id, "refusal", "connect", mailbox_id, f"refused:{refused.reason}")
        raise Forbidden("the provider refused the sign-in: start connecting again") from None
    if account != row["address"] or not tokens.refresh_token:
        if tokens.refresh_token:
            api.revoke(tokens.refresh_token)  # not this mailbox's: ours to give back at once
        reason = "another_account" if account != row["address"] else "no_refresh_token"
        _audit(deps, org_id, user_id, "refusal", "connect", mailbox_id, reason)
        raise Forbidden(
            f"the sign-in was for another account, not {row['address']}: sign in as the"
            " mailbox itself"
            if reason == "another_account"
            else "the provider gave no refresh token: remove the app's access and connect again"
        )
    name = secret_name(org_id, mailbox_id, random_tokens.token_hex(8))
    expires = deps.clock() + timedelta(seconds=tokens.expires_in)
    with deps.db.transaction(org_id) as cur:
        old = repo.lock_one(cur, mailbox_id)
        repo.grant_connected(cur, mailbox_id, name, expires)
        secrets.put(name, _secret(tokens, tokens.refresh_token, expires))  # or nothing connects
        waiting = repo.waiting(cur)
    if old and old["grant_secret"] and old["grant_secret"] != name:
        secrets.delete(str(old["grant_secret"]))
    _audit(deps, org_id, user_id, "effect", "connect", mailbox_id, None)
    stamp = int(deps.clock().timestamp())
    for outbox_id in waiting:  # what waited for the grant goes now
        schedule_send(deps, org_id, outbox_id, attempt=f"connected-{stamp}")
    return {"mailbox_id": mailbox_id, "grant": "connected", "resumed": len(waiting)}


def _secret(tokens: MailboxTokens, refresh: str, expires: datetime) -> str:
    return json.dumps(
        {
            "access_token": tokens.access_token,
            "refresh_token": refresh,
            "expires_at": expires.isoformat(),
        }
    )


def access_token(
    deps: FlowDeps,
    secrets: SecretStore,
    api: MailboxApi,
    org_id: str,
    mailbox_id: str,
    *,
    force: bool = False,
) -> str:
    """The mailbox's access token, refreshed first near its expiry (or when ``force``).
    ``GrantRefused`` when the grant is not connected or the provider refuses the refresh
    (then it is marked revoked, audited)."""
    refused: GrantRefused | None = None
    with deps.db.transaction(org_id) as cur:
        row = repo.lock_one(cur, mailbox_id)
        if row is None or row["grant_status"] != "connected":
            raise GrantRefused("the mailbox's grant is not connected", reason="not_connected")
        stored = json.loads(secrets.get(str(row["grant_secret"])))
        expires = datetime.fromisoformat(stored["expires_at"])
        if not force and expires - deps.clock() > REFRESH_MARGIN:
            return str(stored["access_token"])
        try:
            tokens = api.refresh(str(stored["refresh_token"]))
        except GrantRefused as error:
            refused = error
        else:
            refresh = tokens.refresh_token or str(stored["refresh_token"])
            expires = deps.clock() + timedelta(seconds=tokens.expires_in)
            secrets.put(str(row["grant_secret"]), _secret(tokens, refresh, expires))
            repo.grant_refreshed(cur, mailbox_id, expires)
            return tokens.access_token
    revoke(deps, secrets, org_id, mailbox_id, f"the provider refused the grant ({refused.reason})")
    raise refused


def send(
    deps: FlowDeps,
    secrets: SecretStore,
    api: MailboxApi,
    org_id: str,
    mailbox_id: str,
    mail: Mail,
    thread: str | None,
) -> SentRef:
    """Send ``mail`` from the mailbox; a refused access token is refreshed once."""
    token = access_token(deps, secrets, api, org_id, mailbox_id)
    try:
        return api.send(token, mail, thread)
    except GrantRefused:
        token = access_token(deps, secrets, api, org_id, mailbox_id, force=True)
    try:
        return api.send(token, mail, thread)
    except GrantRefused as refused:
        revoke(
            deps, secrets, org_id, mailbox_id, f"the provider refused the grant ({refused.reason})"
        )
        raise


def revoke(deps: FlowDeps, secrets: SecretStore, org_id: str, mailbox_id: str, reason: str) -> None:
    """The provider refused the grant: revoked (audited), its tokens deleted."""
    with deps.db.transaction(org_id) as cur:
        row = repo.lock_one(cur, mailbox_id)
        if row is None or not repo.grant_revoked(cur, mailbox_id, reason):
            return
        audit.append(
            cur,
            org_id,
            audit.Entry(
                "effect",
                "system",
                "system",
                "mailbox.grant_revoked",
                reason=reason[:300],
                detail={"mailbox_id": mailbox_id},
            ),
        )
    secrets.delete(str(row["grant_secret"]))


def disconnect(
    deps: FlowDeps, secrets: SecretStore, apis: Any, org_id: str, mailbox_id: str, user_id: str
) -> dict[str, Any]:
    """The grant given back to the provider (where it can be), its tokens deleted."""
    with deps.db.transaction(org_id) as cur:
        row = _row(cur, mailbox_id)
    api = _api(apis, row)
    stopped: list[str] = []
    if row["grant_secret"]:
        try:
            api.revoke(str(json.loads(secrets.get(str(row["grant_secret"])))["refresh_token"]))
            stopped.append("the grant was given back to the provider")
        except NotFound:
            pass
        except ProviderUnavailable:
            stopped.append("the provider could not be reached: remove the app's access there")
    with deps.db.transaction(org_id) as cur:
        repo.grant_removed(cur, mailbox_id)
    if row["grant_secret"]:
        secrets.delete(str(row["grant_secret"]))
    stopped.append("its tokens were deleted; its mail waits until it is connected again")
    _audit(deps, org_id, user_id, "effect", "disconnect", mailbox_id, None)
    return {"mailbox_id": mailbox_id, "grant": "none", "stopped": stopped}


def _row(cur: Any, mailbox_id: str) -> Row:
    row = repo.get(cur, mailbox_id)
    if row is None:
        raise NotFound(f"mailbox {mailbox_id[:64]!r} does not exist in this organisation")
    return row


def _audit(
    deps: FlowDeps,
    org_id: str,
    actor: str,
    event: audit.Event,
    action: str,
    mailbox_id: str,
    reason: str | None,
) -> None:
    """On the org's audit log, in a transaction of its own (never a token or a state)."""
    entry = audit.Entry(
        event, actor, "admin", f"mailbox.{action}", reason=reason, detail={"mailbox_id": mailbox_id}
    )
    with deps.db.transaction(org_id) as cur:
        audit.append(cur, org_id, entry)
