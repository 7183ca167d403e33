"""``colony.runtime.rs256``: the RS256 verifier and the JWKS cache, against tokens PyJWT signs
and a real HTTP server publishing the keys (``tests/test_auth.py`` covers the bearer and OIDC
rules built on them)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Iterator
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from colony.runtime import rs256
from colony.testing.wire import RecordedRequest, Reply, Route, WireServer

NOW = 1_800_000_000.0


@pytest.fixture(scope="module")
def key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(65537, 2048)


def token(key: rsa.RSAPrivateKey | Any, kid: str = "k-1", alg: str = "RS256", **claims: Any) -> str:
    body = {"sub": "someone", "iat": int(NOW), "exp": int(NOW) + 300, **claims}
    return jwt.encode(
        {k: v for k, v in body.items() if v is not None}, key, alg, headers={"kid": kid}
    )


def decode(key: rsa.RSAPrivateKey, text: str, **options: Any) -> dict[str, Any]:
    return rs256.decode(text, key.public_key(), leeway=30, now=NOW, **options)


def test_a_token_pyjwt_signs_verifies(key: rsa.RSAPrivateKey) -> None:
    claims = decode(key, token(key, aud=["a", "b"], iss="y"), audience="b", issuer=("x", "y"))
    assert claims["sub"] == "someone" and claims["aud"] == ["a", "b"]
    assert rs256.header(token(key)) == {"alg": "RS256", "typ": "JWT", "kid": "k-1"}


def test_another_key_or_a_changed_payload_does_not_verify(key: rsa.RSAPrivateKey) -> None:
    with pytest.raises(rs256.BadSignature):
        decode(key, token(rsa.generate_private_key(65537, 2048)))
    head, body, signature = token(key).split(".")
    changed = json.loads(base64.urlsafe_b64decode(body + "=="))
    changed["sub"] = "someone else"
    forged = base64.urlsafe_b64encode(json.dumps(changed).encode()).rstrip(b"=").decode()
    with pytest.raises(rs256.BadSignature):
        decode(key, f"{head}.{forged}.{signature}")


@pytest.mark.parametrize(
    "text",
    ["", "a.b", "a.b.c.d", "!!!.e30.", "e30.!!!.", "WzFd.e30.", "bnVsbA.e30."],
    ids=["empty", "two-parts", "four-parts", "bad-base64", "bad-body", "array", "null"],
)
def test_malformed_tokens(key: rsa.RSAPrivateKey, text: str) -> None:
    with pytest.raises(rs256.TokenError):
        decode(key, text)


def test_only_rs256_is_accepted(key: rsa.RSAPrivateKey) -> None:
    for alg, signer in (("HS256", "k" * 32), ("ES256", ec.generate_private_key(ec.SECP256R1()))):
        with pytest.raises(rs256.WrongAlgorithm):
            decode(key, token(signer, alg=alg))
    head = base64.urlsafe_b64encode(b'{"alg":"RS256","kid":7}').rstrip(b"=").decode()
    with pytest.raises(rs256.Malformed, match="key id"):
        rs256.header(f"{head}.e30.c2ln")


def test_time_claims_with_leeway(key: rsa.RSAPrivateKey) -> None:
    assert decode(key, token(key, exp=int(NOW) - 29))  # within the leeway
    with pytest.raises(rs256.Expired):
        decode(key, token(key, exp=int(NOW) - 30))  # at the leeway's edge: expired
    with pytest.raises(rs256.NotYetValid, match="nbf"):
        decode(key, token(key, nbf=int(NOW) + 31))
    with pytest.raises(rs256.NotYetValid, match="iat"):
        decode(key, token(key, iat=int(NOW) + 31))
    for claim in ("exp", "nbf", "iat"):
        with pytest.raises(rs256.Malformed, match=claim):
            decode(key, token(key, **{claim: "soon"}))


def test_required_issuer_audience_and_string_claims(key: rsa.RSAPrivateKey) -> None:
    with pytest.raises(rs256.MissingClaim) as missing:
        decode(key, token(key, exp=None))
    assert missing.value.claim == "exp"
    with pytest.raises(rs256.MissingClaim, match="iss"):
        decode(key, token(key), issuer="x")
    with pytest.raises(rs256.WrongIssuer):
        decode(key, token(key, iss="z"), issuer=("x", "y"))
    with pytest.raises(rs256.MissingClaim, match="aud"):
        decode(key, token(key), audience="a")
    for aud in ("b", ["b", "c"], [1]):
        with pytest.raises(rs256.WrongAudience):
            decode(key, token(key, aud=aud), audience="a")
    assert decode(key, token(key, aud="other"))  # not asked for: not checked
    for claim in ("sub", "jti"):
        with pytest.raises(rs256.Malformed, match=claim):
            decode(key, token(key, **{claim: 5}))


class Keys:
    """A JWKS endpoint on a real HTTP server; what it publishes can change, and every fetch
    is recorded."""

    ROUTE = "jwks"

    def __init__(self, server: WireServer) -> None:
        self.server = server
        self.keys: list[dict[str, Any]] = []
        server.add_route(Route.of(self.ROUTE, "GET", r"/jwks", self._serve))

    def publish(self, *entries: dict[str, Any]) -> None:
        self.keys = list(entries)

    def _serve(self, request: RecordedRequest) -> Reply:
        return Reply(200, {"keys": self.keys})

    @property
    def url(self) -> str:
        return f"{self.server.base_url}/jwks"

    @property
    def fetches(self) -> int:
        return len(self.server.requests_to(self.ROUTE))


def jwk(key: rsa.RSAPrivateKey, kid: str, **extra: Any) -> dict[str, Any]:
    public = jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
    return {**public, "kid": kid, "alg": "RS256", "use": "sig", **extra}


@pytest.fixture
def keys(server: WireServer) -> Iterator[Keys]:
    yield Keys(server)


def test_a_key_set_is_fetched_once_then_again_for_an_unknown_kid(
    key: rsa.RSAPrivateKey, keys: Keys
) -> None:
    keys.publish(jwk(key, "k-1"))
    found = rs256.KeySet(keys.url)
    assert found.key("k-1").public_numbers() == key.public_key().public_numbers()
    assert found.key("k-1") and keys.fetches == 1
    rotated = rsa.generate_private_key(65537, 2048)
    keys.publish(jwk(key, "k-1"), jwk(rotated, "k-2"))
    assert found.key("k-2").public_numbers() == rotated.public_key().public_numbers()
    assert keys.fetches == 2  # the new kid made one refetch
    with pytest.raises(rs256.UnknownKey):
        found.key("k-3")
    with pytest.raises(rs256.UnknownKey):
        found.key(None)  # a token without a kid names no key
    assert keys.fetches == 4


def test_an_expired_key_set_is_fetched_again(key: rsa.RSAPrivateKey, keys: Keys) -> None:
    keys.publish(jwk(key, "k-1"))
    found = rs256.KeySet(keys.url, lifespan=0)  # every set is already too old to trust
    found.key("k-1")
    keys.publish()  # the key was withdrawn
    with pytest.raises(rs256.UnknownKey):
        found.key("k-1")
    assert keys.fetches == 2


def test_keys_that_are_not_rsa_signing_keys_are_left_out(
    key: rsa.RSAPrivateKey, keys: Keys
) -> None:
    keys.publish(
        jwk(key, "enc", use="enc"),
        jwk(key, "ps", alg="PS256"),
        {**jwk(key, "ec"), "kty": "EC"},
        {**jwk(key, "broken"), "n": "!!"},
        {k: v for k, v in jwk(key, "x").items() if k != "kid"},
        "not a key",
        jwk(key, "good"),
    )
    found = rs256.KeySet(keys.url)
    assert found.key("good")
    for kid in ("enc", "ps", "ec", "broken"):
        with pytest.raises(rs256.UnknownKey):
            found.key(kid)


def test_a_failed_or_garbled_fetch_is_keys_unavailable_and_caches_nothing(
    key: rsa.RSAPrivateKey, keys: Keys, server: WireServer
) -> None:
    server.script(Reply(503, {"error": "unavailable"}))
    found = rs256.KeySet(keys.url)
    with pytest.raises(rs256.KeysUnavailable):
        found.key("k-1")
    server.script(Reply(200, {"keys": "none"}))
    with pytest.raises(rs256.KeysUnavailable):
        found.key("k-1")
    keys.publish(jwk(key, "k-1"))
    assert found.key("k-1")  # the next request fetches again
    assert rs256.key_set(keys.url) is rs256.key_set(keys.url)  # one cache per URL


def _segment(value: dict[str, Any] | bytes) -> str:
    raw = value if isinstance(value, bytes) else json.dumps(value).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def test_it_accepts_and_refuses_what_pyjwt_does(key: rsa.RSAPrivateKey) -> None:
    """One verifier held against the other: each token below, PyJWT's ``decode`` (RS256 only,
    ``exp`` required, the same audience, issuer and leeway) and ours both accept, or both
    refuse. At the real time, since PyJWT reads the clock itself."""
    now = int(time.time())
    right = {"aud": "a", "iss": "x", "iat": now, "exp": now + 300}
    other = rsa.generate_private_key(65537, 2048)
    pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    head, body = _segment({"alg": "HS256", "typ": "JWT"}), _segment(right)
    mac = hmac.new(pem, f"{head}.{body}".encode(), hashlib.sha256).digest()  # alg confusion
    valid = token(key, **right)
    v_head, v_body, v_sig = valid.split(".")
    cases = {
        "valid": (valid, True),
        "aud in a list": (token(key, **{**right, "aud": ["b", "a"]}), True),
        "just within the leeway": (token(key, **{**right, "exp": now - 20}), True),
        "expired": (token(key, **{**right, "exp": now - 120}), False),
        "not before, later": (token(key, **{**right, "nbf": now + 120}), False),
        "issued in the future": (token(key, **{**right, "iat": now + 120}), False),
        "no exp": (token(key, **{**right, "exp": None}), False),
        "another key": (token(other, **right), False),
        "wrong audience": (token(key, **{**right, "aud": "b"}), False),
        "no audience": (token(key, **{**right, "aud": None}), False),
        "wrong issuer": (token(key, **{**right, "iss": "y"}), False),
        "no issuer": (token(key, **{**right, "iss": None}), False),
        "HS256 keyed with the public key": (f"{head}.{body}.{_segment(mac)}", False),
        "alg none": (f"{_segment({'alg': 'none'})}.{body}.", False),
        "changed claims": (
            f"{v_head}.{_segment({**right, 'iss': 'x', 'sub': 'z'})}.{v_sig}",
            False,
        ),
        "no signature": (f"{v_head}.{v_body}.", False),
        "exp not a number": (token(key, **{**right, "exp": "later"}), False),
    }
    for name, (text, accepted) in cases.items():
        try:
            rs256.decode(text, key.public_key(), leeway=30, audience="a", issuer="x")
            ours = True
        except rs256.TokenError:
            ours = False
        try:
            jwt.decode(
                text,
                key.public_key(),
                algorithms=["RS256"],
                audience="a",
                issuer="x",
                leeway=30,
                options={"require": ["exp"]},
            )
            theirs = True
        except jwt.PyJWTError:
            theirs = False
        assert (ours, theirs) == (accepted, accepted), name
