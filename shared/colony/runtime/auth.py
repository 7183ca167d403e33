"""Who is calling: user bearer tokens (Clerk JWTs), signed approval links, Google OIDC.

- ``verify_bearer``: RS256 only, ``exp`` required (with ``COLONY_JWT_LEEWAY_SECONDS`` of
  clock skew, 30 by default), issuer checked when configured, and the authorized party
  (``azp``: the origin the token was made for) checked against
  ``COLONY_JWT_AUTHORIZED_PARTIES`` when that is set; keys from Clerk's JWKS in production,
  or a PEM (``COLONY_JWT_PUBLIC_KEY``, else the local key pair under the data dir) locally.
  The org comes from the claims — ``org_id`` (Clerk v1) or ``o.id`` (v2) — never from a body.
- ``is_org_admin`` / ``require_org_admin``: whether a verified token carries its org's admin
  role, and the refusal (recorded) of one that is not an admin of the org it acts on; the
  admin API and the chat function's setup routes share them.
- ``sign_approval_token`` / ``verify_approval_token``: a compact HMAC-SHA256 token for
  approval links (``<base64url payload>.<base64url signature>``), expiring, bound to the
  person it was sent to and to a nonce that one decision spends.
- ``verify_google_oidc``: the OIDC token Pub/Sub, Cloud Tasks and Scheduler attach in
  production, verified against Google's JWKS (``COLONY_GOOGLE_JWKS_URL``), fetched once and
  cached per process like Clerk's (not once per request). Locally (``COLONY_ENV=local``)
  those callers carry none, and none is needed.

Tokens are verified by ``colony.runtime.rs256`` (RSA alone, not PyJWT: cold start); the
local key pair and the tokens it signs are ``colony.runtime.local_keys``' (never deployed).

Every failure to authenticate is ``Unauthorized`` (401), a signed token without an org (or
with two) included: nothing can be done in Colony without one.
"""

from __future__ import annotations

import functools
import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from colony.errors import (
    ConfigError,
    OrgScopeError,
    Unauthorized,
    UpstreamError,
    ValidationFailed,
)
from colony.observability import sentry
from colony.runtime import rs256, signed
from colony.settings import Settings

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric import rsa

LEEWAY_SECONDS = 30  # clock skew tolerated on a Google OIDC token's exp / iat
PRIVATE_KEY_FILE = "jwt_private.pem"
PUBLIC_KEY_FILE = "jwt_public.pem"
LOCAL_ISSUER = "colony-local"


@dataclass(frozen=True, slots=True)
class Principal:
    """A verified caller: the org its token names, the user, and the token's claims."""

    org_id: str
    user_id: str
    claims: Mapping[str, Any]


ADMIN_ROLES = ("org:admin", "admin")  # Clerk v1 ``org_role``; v2 ``o.rol`` is "admin"


def is_org_admin(claims: Mapping[str, Any]) -> bool:
    """Whether a verified token carries the org admin role: Clerk v1 puts it in
    ``org_role`` (``org:admin``), v2 in ``o.rol`` (``admin``)."""
    nested = claims.get("o")
    role = claims.get("org_role")
    v2 = nested.get("rol") if isinstance(nested, Mapping) else None
    return role in ADMIN_ROLES or v2 == "admin"


_BEARER_ERRORS: dict[type[rs256.TokenError], str] = {
    rs256.Expired: "the bearer token has expired; sign in again",
    rs256.NotYetValid: "the bearer token is not valid yet",
    rs256.WrongIssuer: "the bearer token was issued by someone we do not trust",
    rs256.BadSignature: "the bearer token's signature does not verify",
    rs256.UnknownKey: "the bearer token was signed by an unknown key",
}


def verify_bearer(header_value: str | None, settings: Settings) -> Principal:
    """Verify ``Authorization: Bearer <JWT>`` and return who is calling, for which org."""
    token = _bearer_token(header_value)
    try:
        header = rs256.header(token)
    except rs256.WrongAlgorithm:
        raise Unauthorized("the bearer token must be signed with RS256") from None
    except rs256.TokenError:
        raise Unauthorized("the bearer token is malformed") from None
    try:
        claims = rs256.decode(
            token,
            _verification_key(header, settings),
            leeway=settings.jwt_leeway_seconds,
            require=("exp", "sub"),
            issuer=settings.jwt_issuer,
        )
    except rs256.MissingClaim as error:
        raise Unauthorized(f"the bearer token has no {error.claim!r} claim") from None
    except rs256.TokenError as error:
        why = _BEARER_ERRORS.get(type(error), "the bearer token is invalid")
        raise Unauthorized(why) from None
    user = claims.get("sub")
    if not isinstance(user, str) or not user:
        raise Unauthorized("the bearer token names no user")
    _check_authorized_party(claims, settings.jwt_authorized_parties)
    principal = Principal(_org_of(claims), user, claims)
    sentry.tag(org_id=principal.org_id)  # the request's events name its (verified) org
    return principal


def require_org_admin(principal: Principal, org: str, record: Callable[[str], None]) -> None:
    """Refuse (``OrgScopeError``, 403) a caller who is not an admin of ``org``, telling
    ``record`` why first (its caller's rejection log: ids and the reason, never the token)."""
    if principal.org_id != org:
        record("forbidden: the token is for another org")
        raise OrgScopeError("you can only administer your own organisation")
    if not is_org_admin(principal.claims):
        record("forbidden: not an org admin")
        raise OrgScopeError("this needs the organisation's admin role")


def _check_authorized_party(claims: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    """Clerk puts the origin a session token was issued to in ``azp``: a token minted for
    another site that trusts the same Clerk instance must not work here."""
    if not allowed:
        return
    party = claims.get("azp")
    if not isinstance(party, str) or not party:
        raise Unauthorized("the bearer token names no authorized party (azp)")
    if party.removesuffix("/") not in allowed:
        raise Unauthorized("the bearer token was issued to another site (azp)")


def _bearer_token(header_value: str | None) -> str:
    scheme, _, token = (header_value or "").strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("send Authorization: Bearer <token>")
    return token.strip()


def _org_of(claims: Mapping[str, Any]) -> str:
    v1 = claims.get("org_id")
    nested = claims.get("o")
    v2 = nested.get("id") if isinstance(nested, Mapping) else None
    if v1 is not None and v2 is not None and v1 != v2:
        raise Unauthorized("the token names two different organisations")
    org = v1 if v1 is not None else v2
    if not isinstance(org, str) or not org.strip():
        raise Unauthorized("the token carries no organisation; choose one and sign in again")
    return org


def _verification_key(header: Mapping[str, Any], settings: Settings) -> rsa.RSAPublicKey:
    if settings.jwt_jwks_url:
        try:
            return rs256.key_set(settings.jwt_jwks_url).key(header.get("kid"))
        except rs256.KeysUnavailable as error:
            raise UpstreamError(str(error)) from None
    if settings.jwt_public_key:
        return pem_public_key(settings.jwt_public_key)
    if settings.env == "local":
        path = Path(settings.data_dir) / PUBLIC_KEY_FILE
        try:
            return pem_public_key(path.read_text())
        except FileNotFoundError:
            raise ConfigError(
                f"no local JWT key at {str(path)!r}; mint a local token with the colony CLI first"
            ) from None
    raise ConfigError("COLONY_JWT_JWKS_URL (or COLONY_JWT_PUBLIC_KEY) is required in production")


@functools.lru_cache(maxsize=8)
def pem_public_key(pem: str) -> rsa.RSAPublicKey:
    """The RSA public key in ``pem`` (cached: a configured key is parsed once)."""
    # lazy: a PEM key is the local (and test) configuration; deployed functions read a JWKS,
    # and PEM parsing loads the serialisation formats (X.509, SSH) they never need
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    try:
        key = serialization.load_pem_public_key(pem.strip().encode())
    except ValueError:
        raise ConfigError("the JWT public key is not a PEM public key") from None
    if not isinstance(key, rsa.RSAPublicKey):
        raise ConfigError("the JWT public key must be an RSA key (tokens are RS256)")
    return key


# ----------------------------------------------------------------------------- approval links


@dataclass(frozen=True, slots=True)
class ApprovalClaim:
    """What a verified approval link allows: who may decide which item of which org, how."""

    org_id: str
    item_id: str
    action: str
    recipient: str  # the user id of the person the link was sent to: only they may use it
    nonce: str  # unique per link: a decision spends it (the audit log keeps it unique)


_ACTION = re.compile(r"^[a-z][a-z_]{0,31}$")
_DOMAIN = b"colony-approval-v2."  # separates these MACs from any other use of the key
_VERSION = 2  # v1 links named no recipient: they no longer verify
_SETTING = "COLONY_APPROVAL_TOKEN_KEY"


def sign_approval_token(
    key: str | bytes,
    org_id: str,
    item_id: str,
    action: str,
    expires_at: datetime,
    *,
    recipient: str,
    nonce: str | None = None,
) -> str:
    """A link token allowing ``recipient`` (a user id) to ``action`` ``item_id`` of
    ``org_id`` once, until ``expires_at``."""
    if not org_id or not item_id or not recipient:
        raise ValidationFailed("org_id, item_id and recipient must be non-empty")
    if not _ACTION.match(action):
        raise ValidationFailed(f"action {action!r} must be a short lower-case word")
    body = {
        "v": _VERSION,
        "o": org_id,
        "i": item_id,
        "a": action,
        "r": recipient,
        "n": nonce or secrets.token_urlsafe(12),
    }
    return signed.sign(key, _DOMAIN, body, expires_at, setting=_SETTING)


def verify_approval_token(key: str | bytes, token: str, now: datetime) -> ApprovalClaim:
    """The claim in ``token`` if its signature verifies and it has not expired. Whether the
    caller is its recipient and whether it was used before are the caller's to check."""
    body = signed.verify(
        key, _DOMAIN, token, now, version=_VERSION, what="approval link", setting=_SETTING
    )
    try:
        claim = ApprovalClaim(
            str(body["o"]), str(body["i"]), str(body["a"]), str(body["r"]), str(body["n"])
        )
    except KeyError:
        raise Unauthorized("the approval link is malformed") from None
    sentry.tag(org_id=claim.org_id)
    return claim


# ----------------------------------------------------------------------------- Google OIDC


GOOGLE_ISSUERS = ("https://accounts.google.com", "accounts.google.com")


def verify_google_oidc(
    header_value: str | None, audience: str, settings: Settings
) -> Mapping[str, Any] | None:
    """Verify the Google OIDC token on a Pub/Sub, Cloud Tasks or Scheduler request.

    Returns its claims, or None in local mode, where the emulators and the local transport
    attach no token and none is checked. In production a missing or invalid token (signature,
    expiry, ``aud`` other than ``audience``, ``iss`` other than Google), or one for another
    service account than ``COLONY_INVOKER_SERVICE_ACCOUNT``, is ``Unauthorized``. Google's
    signing keys come from ``settings.google_jwks_url`` through the process's cached JWKS
    client: fetched on first use and again only when they expire or an unknown key id appears.
    """
    if settings.env == "local":
        return None
    if not audience:
        raise ConfigError("the OIDC audience (this function's URL) must be configured")
    expected = settings.invoker_service_account
    if not expected:
        raise ConfigError("COLONY_INVOKER_SERVICE_ACCOUNT is required to verify OIDC callers")
    token = _bearer_token(header_value)
    try:
        key = rs256.key_set(settings.google_jwks_url).key(rs256.header(token).get("kid"))
        claims = rs256.decode(
            token,
            key,
            leeway=LEEWAY_SECONDS,
            require=("exp", "iat", "aud", "iss"),
            issuer=GOOGLE_ISSUERS,
            audience=audience,
        )
    except rs256.KeysUnavailable:
        raise UpstreamError("cannot fetch Google's token certificates") from None
    except rs256.TokenError as error:
        raise Unauthorized(
            _OIDC_ERRORS.get(type(error), "the OIDC token does not verify")
        ) from None
    if claims.get("email") != expected or claims.get("email_verified") is not True:
        raise Unauthorized("the OIDC token is not the invoker service account's")
    return claims


_OIDC_ERRORS: dict[type[rs256.TokenError], str] = {
    rs256.Malformed: "the OIDC token is malformed",
    rs256.WrongAlgorithm: "the OIDC token must be signed with RS256",
    rs256.UnknownKey: "the OIDC token was signed by an unknown key",
    rs256.Expired: "the OIDC token has expired",
    rs256.WrongAudience: "the OIDC token is for another audience",
    rs256.WrongIssuer: "the OIDC token was not issued by Google",
}
