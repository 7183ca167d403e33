"""The local key pair and the bearer tokens it signs: what ``make run``, the CLI (``colony
token``), the demos and the tests use in place of Clerk. Never deployed: a deployed function
verifies Clerk's tokens against its JWKS (``colony.runtime.auth``) and signs none.

PyJWT signs here and ``colony.runtime.rs256`` verifies, so each checks the other.
"""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from colony.errors import ConfigError, ValidationFailed
from colony.runtime.auth import LOCAL_ISSUER, PRIVATE_KEY_FILE, PUBLIC_KEY_FILE, pem_public_key
from colony.settings import Settings


@dataclass(frozen=True, slots=True)
class LocalKeys:
    """Where the local key pair is: the private half (0600) and the public half."""

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
    if settings.jwt_public_key and pem_public_key(settings.jwt_public_key).public_numbers() != (
        pem_public_key(keys.public_path.read_text()).public_numbers()
    ):
        raise ConfigError(
            f"COLONY_JWT_PUBLIC_KEY is not the local key {str(keys.public_path)!r}; unset it"
        )
    return mint_local_token(settings.data_dir, org_id, issuer=settings.jwt_issuer or LOCAL_ISSUER)
