"""RS256 JSON Web Tokens verified with ``cryptography``'s RSA alone, and the process's cache of
the JSON Web Key Sets that sign them (Clerk's, Google's).

Why not PyJWT: importing it loads every algorithm it knows, and with them ``cryptography``'s
X.509, SSH serialisation and elliptic curves, about 20 ms of every authenticated function's
first request (``bench/cold_start.py``, issue 32 item 4). We accept one algorithm, so we need
one primitive (PKCS#1 v1.5 over SHA-256) and the claim checks below, which follow PyJWT's
(``tests/test_auth.py`` signs its tokens with PyJWT, so every check here is held against
another implementation). PyJWT still mints the local tokens (``colony.runtime.local_keys``).

``decode`` checks, in order: three base64url parts; a JSON object header whose ``alg`` is
RS256 (never ``none``, never an HMAC keyed by the public key); the signature; then the
claims: the required ones present, ``iat`` / ``nbf`` not in the future and ``exp`` not past
(each an integer, with ``leeway`` seconds of clock skew), ``iss`` and ``aud`` when asked for,
``sub`` and ``jti`` strings when present.

Failures, all ``TokenError`` but the fetch::

    TokenError
     ├── Malformed          not a compact JWS of JSON objects
     ├── WrongAlgorithm     ``alg`` other than RS256
     ├── UnknownKey         no key of the set has the token's ``kid`` (after one refetch)
     ├── BadSignature
     ├── MissingClaim       ``.claim`` names it
     ├── Expired
     ├── NotYetValid        ``nbf`` or ``iat`` ahead of the clock
     ├── WrongIssuer
     └── WrongAudience
    KeysUnavailable         the key set could not be fetched or read (the signer's fault)
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
import time
import urllib.request
from collections.abc import Collection, Mapping
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.hazmat.primitives.hashes import SHA256

ALGORITHM = "RS256"


class TokenError(Exception):
    """The token does not verify."""


class Malformed(TokenError):
    pass


class WrongAlgorithm(TokenError):
    pass


class UnknownKey(TokenError):
    pass


class BadSignature(TokenError):
    pass


class MissingClaim(TokenError):
    def __init__(self, claim: str) -> None:
        super().__init__(f"the token has no {claim!r} claim")
        self.claim = claim


class Expired(TokenError):
    pass


class NotYetValid(TokenError):
    pass


class WrongIssuer(TokenError):
    pass


class WrongAudience(TokenError):
    pass


class KeysUnavailable(Exception):
    """The key set could not be fetched, or is not a key set."""


def _b64(segment: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
    except (binascii.Error, ValueError):
        raise Malformed("a part of the token is not base64url") from None


def _object(segment: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(_b64(segment))
    except (ValueError, RecursionError):  # not UTF-8, not JSON
        raise Malformed(f"the token's {what} is not JSON") from None
    if not isinstance(value, dict):
        raise Malformed(f"the token's {what} is not a JSON object")
    return value


def _parts(token: str) -> list[str]:
    parts = token.split(".")
    if len(parts) != 3 or not all(parts[:2]):
        raise Malformed("a token has three dot-separated parts")
    return parts


def header(token: str) -> dict[str, Any]:
    """The token's header, not verified: to choose its key. Refuses any ``alg`` but RS256."""
    found = _object(_parts(token)[0], "header")
    if found.get("alg") != ALGORITHM:
        raise WrongAlgorithm("the token must be signed with RS256")
    kid = found.get("kid")
    if kid is not None and not isinstance(kid, str):
        raise Malformed("the token's key id is not a string")
    return found


def decode(
    token: str,
    key: rsa.RSAPublicKey,
    *,
    leeway: float,
    require: Collection[str] = ("exp",),
    issuer: str | Collection[str] | None = None,
    audience: str | None = None,
    now: float | None = None,
) -> dict[str, Any]:
    """The token's claims, once its signature verifies with ``key`` and its claims hold."""
    head, body, signature = _parts(token)
    header(token)
    try:
        key.verify(_b64(signature), f"{head}.{body}".encode(), padding.PKCS1v15(), SHA256())
    except InvalidSignature:
        raise BadSignature("the token's signature does not verify") from None
    claims = _object(body, "claims")
    _check(claims, leeway, require, issuer, audience, time.time() if now is None else now)
    return claims


def _when(claims: Mapping[str, Any], name: str) -> int:
    try:
        return int(claims[name])
    except (ValueError, TypeError, OverflowError):
        raise Malformed(f"the token's {name!r} claim is not an integer") from None


def _check(
    claims: Mapping[str, Any],
    leeway: float,
    require: Collection[str],
    issuer: str | Collection[str] | None,
    audience: str | None,
    now: float,
) -> None:
    for name in require:
        if claims.get(name) is None:
            raise MissingClaim(name)
    if "iat" in claims and _when(claims, "iat") > now + leeway:
        raise NotYetValid("the token was issued in the future (iat)")
    if "nbf" in claims and _when(claims, "nbf") > now + leeway:
        raise NotYetValid("the token is not valid yet (nbf)")
    if "exp" in claims and _when(claims, "exp") <= now - leeway:
        raise Expired("the token has expired")
    if issuer is not None:
        if "iss" not in claims:
            raise MissingClaim("iss")
        iss = claims["iss"]
        trusted = (issuer,) if isinstance(issuer, str) else issuer
        if not isinstance(iss, str) or iss not in trusted:
            raise WrongIssuer("the token was issued by someone we do not trust")
    _check_audience(claims.get("aud"), audience)
    for name in ("sub", "jti"):
        if name in claims and not isinstance(claims[name], str):
            raise Malformed(f"the token's {name!r} claim is not a string")


def _check_audience(aud: Any, audience: str | None) -> None:
    if audience is None:  # not asked for: a Clerk session token's audience is not checked
        return
    if not aud:
        raise MissingClaim("aud")
    named = [aud] if isinstance(aud, str) else aud
    if not isinstance(named, list) or not all(isinstance(a, str) for a in named):
        raise WrongAudience("the token's audience is not a string or a list of them")
    if audience not in named:
        raise WrongAudience("the token is for another audience")


class KeySet:
    """One JSON Web Key Set, fetched on first use and again when it is older than
    ``lifespan`` seconds or names no key with a token's ``kid`` (keys rotate), one fetch at a
    time. A failed fetch caches nothing."""

    def __init__(self, url: str, *, lifespan: float = 3600, timeout: float = 10) -> None:
        self.url = url
        self.lifespan = lifespan
        self.timeout = timeout
        self._lock = threading.Lock()
        self._keys: dict[str, rsa.RSAPublicKey] = {}
        self._fetched: float | None = None

    def key(self, kid: str | None) -> rsa.RSAPublicKey:
        """The signing key named ``kid``: ``UnknownKey`` if the set has none (refetched once)."""
        with self._lock:
            fresh = self._fetched is not None and time.monotonic() - self._fetched < self.lifespan
            if not fresh:
                self._fetch()
            found = self._keys.get(kid or "")
            if found is None and fresh:
                self._fetch()
                found = self._keys.get(kid or "")
        if found is None:
            raise UnknownKey("the token was signed by an unknown key")
        return found

    def _fetch(self) -> None:
        request = urllib.request.Request(self.url, headers={"Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                document = json.loads(response.read())
        except (OSError, ValueError) as error:  # URLError and HTTPError are OSErrors
            raise KeysUnavailable(f"cannot fetch the JWKS: {type(error).__name__}") from None
        entries = document.get("keys") if isinstance(document, dict) else None
        if not isinstance(entries, list):
            raise KeysUnavailable("the JWKS has no list of keys")
        self._keys = {
            entry["kid"]: public
            for entry in entries
            if isinstance(entry, dict) and (public := _rsa_key(entry)) is not None
        }
        self._fetched = time.monotonic()


def _rsa_key(jwk: Mapping[str, Any]) -> rsa.RSAPublicKey | None:
    """The RSA signing key of one JWK with a ``kid``; None for any other (its use, type or
    algorithm is not ours, or it is not well formed)."""
    if (
        jwk.get("kty") != "RSA"
        or jwk.get("use", "sig") != "sig"
        or jwk.get("alg", ALGORITHM) != ALGORITHM
    ):
        return None
    kid, n, e = jwk.get("kid"), jwk.get("n"), jwk.get("e")
    if not (isinstance(kid, str) and kid and isinstance(n, str) and isinstance(e, str)):
        return None
    try:
        numbers = rsa.RSAPublicNumbers(
            int.from_bytes(_b64(e), "big"), int.from_bytes(_b64(n), "big")
        )
        return numbers.public_key()
    except (Malformed, ValueError):
        return None


_sets_lock = threading.Lock()
_sets: dict[str, KeySet] = {}


def key_set(url: str) -> KeySet:
    """This process's ``KeySet`` for ``url`` (one per URL, so one cache per signer)."""
    with _sets_lock:
        found = _sets.get(url)
        if found is None:
            found = _sets[url] = KeySet(url)
        return found
