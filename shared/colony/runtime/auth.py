"""Who is calling: user bearer tokens (Clerk JWTs), signed approval links, Google OIDC.

- ``verify_bearer``: RS256 only, ``exp`` required (with ``COLONY_JWT_LEEWAY_SECONDS`` of
  clock skew, 30 by default), issuer checked when configured, and the authorized party
  (``azp``: the origin the token was made for) checked against
  ``COLONY_JWT_AUTHORIZED_PARTIES`` when that is set; keys from Clerk's JWKS in production,
  or a PEM (``COLONY_JWT_PUBLIC_KEY``, else the local key pair under the data dir) locally.
  The org comes from the claims — ``org_id`` (Clerk v1) or ``o.id`` (v2) — never from a body.
- ``sign_approval_token`` / ``verify_approval_token``: a compact HMAC-SHA256 token for
  approval links (``<base64url payload>.<base64url signature>``), expiring, bound to the
  person it was sent to and to a nonce that one decision spends.
- ``verify_google_oidc``: the OIDC token Pub/Sub, Cloud Tasks and Scheduler attach in
  production, verified against Google's JWKS (``COLONY_GOOGLE_JWKS_URL``), fetched once and
  cached per process like Clerk's (not once per request). Locally (``COLONY_ENV=local``)
  those callers carry none, and none is needed.

Every failure to authenticate is ``Unauthorized`` (401), a signed token without an org (or
with two) included: nothing can be done in Colony without one.
"""

from __future__ import annotations

import fcntl
import functools
import os
import re
import secrets
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from colony.errors import ConfigError, Unauthorized, UpstreamError, ValidationFailed
from colony.observability import sentry
from colony.runtime import signed
from colony.settings import Settings

ALGORITHMS = ["RS256"]  # never HS* (key confusion) and never "none"
LEEWAY = timedelta(seconds=30)  # clock skew tolerated on a Google OIDC token's exp / iat
PRIVATE_KEY_FILE = "jwt_private.pem"
PUBLIC_KEY_FILE = "jwt_public.pem"
LOCAL_ISSUER = "colony-local"


@dataclass(frozen=True, slots=True)
class Principal:
    org_id: str
    user_id: str
    claims: Mapping[str, Any]


def verify_bearer(header_value: str | None, settings: Settings) -> Principal:
    """Verify ``Authorization: Bearer <JWT>`` and return who is calling, for which org."""
    token = _bearer_token(header_value)
    try:
        header = jwt.get_unverified_header(token)
    except jwt.InvalidTokenError:
        raise Unauthorized("the bearer token is malformed") from None
    if header.get("alg") not in ALGORITHMS:
        raise Unauthorized("the bearer token must be signed with RS256")
    key = _verification_key(token, settings)
    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            key,
            algorithms=ALGORITHMS,
            issuer=settings.jwt_issuer,
            leeway=timedelta(seconds=settings.jwt_leeway_seconds),
            options={"require": ["exp", "sub"], "verify_aud": False},
        )
    except jwt.ExpiredSignatureError:
        raise Unauthorized("the bearer token has expired; sign in again") from None
    except jwt.ImmatureSignatureError:
        raise Unauthorized("the bearer token is not valid yet") from None
    except jwt.InvalidIssuerError:
        raise Unauthorized("the bearer token was issued by someone we do not trust") from None
    except jwt.MissingRequiredClaimError as error:
        raise Unauthorized(f"the bearer token has no {error.claim!r} claim") from None
    except jwt.InvalidSignatureError:
        raise Unauthorized("the bearer token's signature does not verify") from None
    except jwt.InvalidTokenError:
        raise Unauthorized("the bearer token is invalid") from None
    user = claims.get("sub")
    if not isinstance(user, str) or not user:
        raise Unauthorized("the bearer token names no user")
    _check_authorized_party(claims, settings.jwt_authorized_parties)
    principal = Principal(_org_of(claims), user, claims)
    sentry.tag(org_id=principal.org_id)  # the request's events name its (verified) org
    return principal


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


def _verification_key(token: str, settings: Settings) -> Any:
    if settings.jwt_jwks_url:
        try:
            return _jwks_client(settings.jwt_jwks_url).get_signing_key_from_jwt(token).key
        except jwt.PyJWKClientConnectionError as error:
            raise UpstreamError(f"cannot fetch the JWKS: {type(error).__name__}") from None
        except (jwt.PyJWKClientError, jwt.InvalidTokenError):
            raise Unauthorized("the bearer token was signed by an unknown key") from None
    if settings.jwt_public_key:
        return _public_key(settings.jwt_public_key)
    if settings.env == "local":
        path = Path(settings.data_dir) / PUBLIC_KEY_FILE
        try:
            return _public_key(path.read_text())
        except FileNotFoundError:
            raise ConfigError(
                f"no local JWT key at {str(path)!r}; mint a local token with the colony CLI first"
            ) from None
    raise ConfigError("COLONY_JWT_JWKS_URL (or COLONY_JWT_PUBLIC_KEY) is required in production")


_jwks_lock = threading.Lock()
_jwks_clients: dict[str, jwt.PyJWKClient] = {}


def _jwks_client(url: str) -> jwt.PyJWKClient:
    with _jwks_lock:
        client = _jwks_clients.get(url)
        if client is None:
            client = jwt.PyJWKClient(url, cache_keys=True, lifespan=3600, timeout=10)
            _jwks_clients[url] = client
        return client


@functools.lru_cache(maxsize=8)
def _public_key(pem: str) -> rsa.RSAPublicKey:
    try:
        key = serialization.load_pem_public_key(pem.strip().encode())
    except ValueError:
        raise ConfigError("the JWT public key is not a PEM public key") from None
    if not isinstance(key, rsa.RSAPublicKey):
        raise ConfigError("the JWT public key must be an RSA key (tokens are RS256)")
    return key


# ----------------------------------------------------------------------------- local tokens


@dataclass(frozen=True, slots=True)
class LocalKeys:
    private_path: Path
    public_path: Path


def ensure_local_keys(data_dir: Path | str) -> LocalKeys:
    """Create the local RSA key pair under ``data_dir`` once (private key mode 0600)."""
    root = Path(data_dir)
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    keys = LocalKeys(root / PRIVATE_KEY_FILE, root / PUBLIC_KEY_FILE)
    # An exclusive lock, so two processes starting together never write mismatched halves.
    with open(root / "jwt.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not keys.private_path.exists():
            private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            pem = private.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
            _write(keys.private_path, pem, 0o600)
            keys.public_path.unlink(missing_ok=True)
        if not keys.public_path.exists():
            private_key = _private_key(keys.private_path)
            public = private_key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            _write(keys.public_path, public, 0o644)
    return keys


def _write(path: Path, data: bytes, mode: int) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    os.chmod(tmp, mode)  # the umask may have narrowed it
    os.replace(tmp, path)


def _private_key(path: Path) -> rsa.RSAPrivateKey:
    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    if not isinstance(key, rsa.RSAPrivateKey):
        raise ConfigError(f"{str(path)!r} is not an RSA private key")
    return key


def mint_local_token(
    data_dir: Path | str,
    org_id: str,
    user_id: str = "local-user",
    ttl: timedelta = timedelta(hours=12),
    *,
    issuer: str | None = None,
    org_claim: Literal["v1", "v2"] = "v1",
    now: datetime | None = None,
) -> str:
    """A session token for ``org_id`` signed with the local key pair (Clerk v1 or v2 shape)."""
    if not org_id.strip():
        raise ValidationFailed("org_id must be a non-empty string")
    keys = ensure_local_keys(data_dir)
    issued = now or datetime.now(UTC)
    claims: dict[str, Any] = {
        "sub": user_id,
        "iss": issuer or LOCAL_ISSUER,
        "iat": int(issued.timestamp()),
        "nbf": int(issued.timestamp()),
        "exp": int((issued + ttl).timestamp()),
    }
    if org_claim == "v1":
        claims["org_id"] = org_id
    else:
        claims.update(v=2, o={"id": org_id, "rol": "admin"})
    return jwt.encode(claims, _private_key(keys.private_path), algorithm="RS256")


def mint_token_command(settings: Settings, org_id: str) -> str:
    """``colony token <org>``: a local token that this configuration's functions accept."""
    if settings.env != "local":
        raise ConfigError("local tokens exist only with COLONY_ENV=local; sign in through Clerk")
    if settings.jwt_jwks_url:
        raise ConfigError("COLONY_JWT_JWKS_URL is set, so a locally signed token would not verify")
    keys = ensure_local_keys(settings.data_dir)
    if settings.jwt_public_key and _public_key(settings.jwt_public_key).public_numbers() != (
        _public_key(keys.public_path.read_text()).public_numbers()
    ):
        raise ConfigError(
            f"COLONY_JWT_PUBLIC_KEY is not the local key {str(keys.public_path)!r}; unset it"
        )
    return mint_local_token(settings.data_dir, org_id, issuer=settings.jwt_issuer or LOCAL_ISSUER)


# ----------------------------------------------------------------------------- approval links


@dataclass(frozen=True, slots=True)
class ApprovalClaim:
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
        header = jwt.get_unverified_header(token)
    except jwt.InvalidTokenError:
        raise Unauthorized("the OIDC token is malformed") from None
    if header.get("alg") not in ALGORITHMS:
        raise Unauthorized("the OIDC token must be signed with RS256")
    try:
        key = _jwks_client(settings.google_jwks_url).get_signing_key_from_jwt(token).key
    except jwt.PyJWKClientConnectionError:
        raise UpstreamError("cannot fetch Google's token certificates") from None
    except (jwt.PyJWKClientError, jwt.InvalidTokenError):
        raise Unauthorized("the OIDC token was signed by an unknown key") from None
    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            key,
            algorithms=ALGORITHMS,
            audience=audience,
            issuer=GOOGLE_ISSUERS,
            leeway=LEEWAY,
            options={"require": ["exp", "iat", "aud", "iss"]},
        )
    except jwt.ExpiredSignatureError:
        raise Unauthorized("the OIDC token has expired") from None
    except jwt.InvalidAudienceError:
        raise Unauthorized("the OIDC token is for another audience") from None
    except jwt.InvalidIssuerError:
        raise Unauthorized("the OIDC token was not issued by Google") from None
    except jwt.InvalidTokenError:
        raise Unauthorized("the OIDC token does not verify") from None
    if claims.get("email") != expected or claims.get("email_verified") is not True:
        raise Unauthorized("the OIDC token is not the invoker service account's")
    return claims
