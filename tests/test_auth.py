"""Bearer tokens, approval links and Google OIDC: what verifies, and what is refused how."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import stat
import sys
import textwrap
import threading
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import functions_framework
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from colony.errors import ConfigError, Unauthorized, UpstreamError, ValidationFailed
from colony.local.tokens import ensure_local_keys, mint_local_token, mint_token_command
from colony.runtime import auth
from colony.runtime.auth import (
    ApprovalClaim,
    Principal,
    sign_approval_token,
    verify_approval_token,
    verify_bearer,
    verify_google_oidc,
)
from colony.settings import Settings
from colony.testing.wire import RecordedRequest, Reply, Route, WireServer

NOW = datetime.now(UTC)
KEY = "k" * 16 + "0123456789abcdef0123456789abcdef"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    ensure_local_keys(tmp_path)
    return Settings(data_dir=tmp_path)


def private_key(data_dir: Path) -> rsa.RSAPrivateKey:
    key = serialization.load_pem_private_key((data_dir / auth.PRIVATE_KEY_FILE).read_bytes(), None)
    assert isinstance(key, rsa.RSAPrivateKey)
    return key


def claims(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "sub": "user_1",
        "org_id": "org_a",
        "iat": int(NOW.timestamp()),
        "exp": int((NOW + timedelta(minutes=5)).timestamp()),
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not None}


def sign(data_dir: Path, payload: Mapping[str, Any], **kwargs: Any) -> str:
    return jwt.encode(dict(payload), private_key(data_dir), algorithm="RS256", **kwargs)


def bearer(token: str) -> str:
    return f"Bearer {token}"


# ----------------------------------------------------------------------------- bearer tokens


def test_local_token_v1_and_v2_org_claims(settings: Settings, tmp_path: Path) -> None:
    v1 = verify_bearer(bearer(mint_local_token(tmp_path, "org_a")), settings)
    assert (v1.org_id, v1.user_id) == ("org_a", "local-user")
    v2_token = mint_local_token(tmp_path, "org_b", "user_9", org_claim="v2")
    v2 = verify_bearer(f"bearer   {v2_token} ", settings)
    assert isinstance(v2, Principal) and (v2.org_id, v2.user_id) == ("org_b", "user_9")
    assert v2.claims["o"]["id"] == "org_b" and "org_id" not in v2.claims


def test_clerk_v2_claims_signed_elsewhere(settings: Settings, tmp_path: Path) -> None:
    token = sign(tmp_path, claims(org_id=None, v=2, o={"id": "org_c", "rol": "member"}))
    assert verify_bearer(bearer(token), settings).org_id == "org_c"


def test_configured_public_key_is_used(tmp_path: Path) -> None:
    ensure_local_keys(tmp_path / "a")
    pem = (tmp_path / "a" / auth.PUBLIC_KEY_FILE).read_text()
    settings = Settings(data_dir=tmp_path / "nowhere", jwt_public_key=pem)
    token = sign(tmp_path / "a", claims())
    assert verify_bearer(bearer(token), settings).org_id == "org_a"


def test_expired_token(settings: Settings, tmp_path: Path) -> None:
    token = mint_local_token(
        tmp_path, "org_a", ttl=timedelta(minutes=1), now=NOW - timedelta(hours=1)
    )
    with pytest.raises(Unauthorized, match="expired"):
        verify_bearer(bearer(token), settings)


def test_small_clock_skew_is_tolerated(settings: Settings, tmp_path: Path) -> None:
    skewed = claims(nbf=int((NOW + timedelta(seconds=10)).timestamp()))
    assert verify_bearer(bearer(sign(tmp_path, skewed)), settings).org_id == "org_a"
    future = claims(nbf=int((NOW + timedelta(minutes=10)).timestamp()))
    with pytest.raises(Unauthorized, match="not valid yet"):
        verify_bearer(bearer(sign(tmp_path, future)), settings)


def test_wrong_key(settings: Settings, tmp_path: Path) -> None:
    ensure_local_keys(tmp_path / "other")
    token = sign(tmp_path / "other", claims())
    with pytest.raises(Unauthorized, match="signature"):
        verify_bearer(bearer(token), settings)


def _segment(value: Mapping[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


def test_alg_none_is_refused(settings: Settings) -> None:
    token = f"{_segment({'alg': 'none', 'typ': 'JWT'})}.{_segment(claims())}."
    with pytest.raises(Unauthorized, match="RS256"):
        verify_bearer(bearer(token), settings)


def test_hs256_with_the_public_key_as_secret_is_refused(settings: Settings, tmp_path: Path) -> None:
    """The classic key-confusion attack: HMAC the token with the (public) RSA key."""
    public_pem = (tmp_path / auth.PUBLIC_KEY_FILE).read_bytes()
    signing_input = f"{_segment({'alg': 'HS256', 'typ': 'JWT'})}.{_segment(claims())}"
    mac = hmac.new(public_pem, signing_input.encode(), hashlib.sha256).digest()
    token = f"{signing_input}.{base64.urlsafe_b64encode(mac).rstrip(b'=').decode()}"
    with pytest.raises(Unauthorized):
        verify_bearer(bearer(token), settings)
    pem_settings = replace(settings, jwt_public_key=public_pem.decode())
    with pytest.raises(Unauthorized):
        verify_bearer(bearer(token), pem_settings)


@pytest.mark.parametrize(
    "header",
    [None, "", "Bearer", "Bearer   ", "Basic dXNlcjpwYXNz", "Token abc", "Bearer abc.def"],
)
def test_missing_or_garbage_header(settings: Settings, header: str | None) -> None:
    with pytest.raises(Unauthorized):
        verify_bearer(header, settings)


@pytest.mark.parametrize("missing", ["exp", "sub"])
def test_required_claims(settings: Settings, tmp_path: Path, missing: str) -> None:
    with pytest.raises(Unauthorized, match=missing):
        verify_bearer(bearer(sign(tmp_path, claims(**{missing: None}))), settings)


@pytest.mark.parametrize(
    "org_claims",
    [{"org_id": None}, {"org_id": ""}, {"org_id": None, "o": {"rol": "x"}}, {"org_id": 7}],
    ids=["none", "blank", "v2-without-id", "not-a-string"],
)
def test_no_org_is_401(settings: Settings, tmp_path: Path, org_claims: dict[str, Any]) -> None:
    with pytest.raises(Unauthorized, match="no organisation"):
        verify_bearer(bearer(sign(tmp_path, claims(**org_claims))), settings)


def test_two_different_orgs_are_refused(settings: Settings, tmp_path: Path) -> None:
    token = sign(tmp_path, claims(org_id="org_a", o={"id": "org_b"}))
    with pytest.raises(Unauthorized, match="two different"):
        verify_bearer(bearer(token), settings)


def test_issuer_is_checked_when_configured(settings: Settings, tmp_path: Path) -> None:
    strict = replace(settings, jwt_issuer="https://clerk.example.com")
    good = sign(tmp_path, claims(iss="https://clerk.example.com"))
    assert verify_bearer(bearer(good), strict).org_id == "org_a"
    for other in ("https://evil.example.com", None):
        with pytest.raises(Unauthorized):
            verify_bearer(bearer(sign(tmp_path, claims(iss=other))), strict)


APP = "https://app.colony.example"


def test_authorized_party_is_checked_when_configured(settings: Settings, tmp_path: Path) -> None:
    """Clerk's ``azp`` names the origin a session token was made for: with
    COLONY_JWT_AUTHORIZED_PARTIES set, a token for another site (of the same Clerk instance)
    or one naming none is refused; unset, ``azp`` is not looked at."""
    strict = replace(settings, jwt_authorized_parties=(APP, "http://localhost:3000"))
    for party in (APP, "http://localhost:3000", f"{APP}/"):
        token = sign(tmp_path, claims(azp=party))
        assert verify_bearer(bearer(token), strict).org_id == "org_a"
    refused = {
        "https://evil.example.com": "another site",
        "https://app.colony.example.evil.com": "another site",
        "http://app.colony.example": "another site",  # the scheme is part of the origin
        "": "names no authorized party",
        None: "names no authorized party",
    }
    for party, why in refused.items():
        with pytest.raises(Unauthorized, match=why):
            verify_bearer(bearer(sign(tmp_path, claims(azp=party))), strict)
    with pytest.raises(Unauthorized, match="no authorized party"):
        verify_bearer(bearer(sign(tmp_path, claims(azp=["https://app.colony.example"]))), strict)
    for party in ("https://evil.example.com", None):  # not configured: not checked
        assert verify_bearer(bearer(sign(tmp_path, claims(azp=party))), settings).user_id


def test_authorized_parties_setting() -> None:
    env = {"COLONY_JWT_AUTHORIZED_PARTIES": f" {APP}/ , http://localhost:3000,,"}
    assert Settings.from_env(env).jwt_authorized_parties == (APP, "http://localhost:3000")
    assert Settings.from_env({}).jwt_authorized_parties == ()
    for bad in ("app.colony.example", f"{APP}/login", "ftp://x.example", f"{APP}?a=1"):
        with pytest.raises(ConfigError, match="COLONY_JWT_AUTHORIZED_PARTIES"):
            Settings.from_env({"COLONY_JWT_AUTHORIZED_PARTIES": bad})


def test_clock_skew_leeway_is_a_setting(settings: Settings, tmp_path: Path) -> None:
    """A token 10 s past its ``exp`` passes the default 30 s of skew, not a leeway of 0 (the
    session browser test runs with 0, so a token the page failed to refresh is refused)."""
    late = sign(tmp_path, claims(exp=int((datetime.now(UTC) - timedelta(seconds=10)).timestamp())))
    assert verify_bearer(bearer(late), settings).user_id == "user_1"
    with pytest.raises(Unauthorized, match="expired; sign in again"):
        verify_bearer(bearer(late), replace(settings, jwt_leeway_seconds=0))
    assert Settings.from_env({}).jwt_leeway_seconds == 30
    assert Settings.from_env({"COLONY_JWT_LEEWAY_SECONDS": "0"}).jwt_leeway_seconds == 0
    for bad in ("-1", "301", "soon"):
        with pytest.raises(ConfigError, match="COLONY_JWT_LEEWAY_SECONDS"):
            Settings.from_env({"COLONY_JWT_LEEWAY_SECONDS": bad})


def test_clerk_frontend_api_setting() -> None:
    api = "https://clerk.colony.example"
    assert Settings.from_env({"COLONY_CLERK_FRONTEND_API": f"{api}/"}).clerk_frontend_api == api
    assert Settings.from_env({}).clerk_frontend_api is None
    for bad in ("clerk.colony.example", f"{api}/v1", f"{api},https://other.example"):
        with pytest.raises(ConfigError, match="COLONY_CLERK_FRONTEND_API"):
            Settings.from_env({"COLONY_CLERK_FRONTEND_API": bad})
    production = {"COLONY_ENV": "production", "COLONY_DB_MODE": "dsn", "COLONY_DB_DSN": "x"}
    production["COLONY_INVOKER_SERVICE_ACCOUNT"] = "invoker@p.iam.gserviceaccount.com"
    with pytest.raises(ConfigError, match="https:// origin in production"):
        Settings.from_env({**production, "COLONY_CLERK_FRONTEND_API": "http://clerk.example"})


def test_missing_keys_are_config_errors(tmp_path: Path) -> None:
    token = jwt.encode(claims(), rsa.generate_private_key(65537, 2048), algorithm="RS256")
    with pytest.raises(ConfigError, match="no local JWT key"):
        verify_bearer(bearer(token), Settings(data_dir=tmp_path / "empty"))
    with pytest.raises(ConfigError, match="COLONY_JWT_JWKS_URL"):
        verify_bearer(bearer(token), Settings(env="production", data_dir=tmp_path))


# ----------------------------------------------------------------------------- JWKS (production)


@pytest.fixture
def jwks_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A real HTTP server publishing the key pair under ``tmp_path/jwks`` as a JWKS."""
    keys = ensure_local_keys(tmp_path / "jwks")
    public = serialization.load_pem_public_key(keys.public_path.read_bytes())
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(public))
    document = json.dumps({"keys": [{**jwk, "kid": "kid-1", "use": "sig", "alg": "RS256"}]})

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(document.encode())

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield (
            f"http://127.0.0.1:{server.server_address[1]}/.well-known/jwks.json",
            tmp_path / "jwks",
        )
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_jwks_keys_in_production(tmp_path: Path, jwks_server: tuple[str, Path]) -> None:
    url, key_dir = jwks_server
    settings = Settings(env="production", db_mode="dsn", jwt_jwks_url=url, data_dir=tmp_path)
    token = sign(key_dir, claims(o={"id": "org_a"}), headers={"kid": "kid-1"})
    assert verify_bearer(bearer(token), settings).org_id == "org_a"
    unknown_kid = sign(key_dir, claims(), headers={"kid": "kid-2"})
    with pytest.raises(Unauthorized, match="unknown key"):
        verify_bearer(bearer(unknown_kid), settings)
    ensure_local_keys(tmp_path / "forger")
    forged = sign(tmp_path / "forger", claims(), headers={"kid": "kid-1"})
    with pytest.raises(Unauthorized, match="signature"):
        verify_bearer(bearer(forged), settings)


def test_unreachable_jwks_is_an_upstream_error(settings: Settings, tmp_path: Path) -> None:
    server = HTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    port = server.server_address[1]
    server.server_close()  # nothing listens there now
    down = replace(settings, jwt_jwks_url=f"http://127.0.0.1:{port}/jwks.json")
    token = sign(tmp_path, claims(), headers={"kid": "kid-1"})
    with pytest.raises(UpstreamError):
        verify_bearer(bearer(token), down)


# ----------------------------------------------------------------------------- local key pair


def test_local_keys_are_created_once_and_private(tmp_path: Path) -> None:
    keys = ensure_local_keys(tmp_path / "d")
    assert stat.S_IMODE(os.stat(keys.private_path).st_mode) == 0o600
    first = keys.private_path.read_bytes(), keys.public_path.read_bytes()
    again = ensure_local_keys(tmp_path / "d")
    assert (again.private_path.read_bytes(), again.public_path.read_bytes()) == first
    keys.public_path.unlink()  # a lost public half is derived again from the private one
    assert ensure_local_keys(tmp_path / "d").public_path.read_bytes() == first[1]


def test_mint_token_command(settings: Settings) -> None:
    token = mint_token_command(settings, "org_demo")
    assert verify_bearer(bearer(token), settings).org_id == "org_demo"
    with_issuer = replace(settings, jwt_issuer="colony-dev")
    assert verify_bearer(bearer(mint_token_command(with_issuer, "o")), with_issuer).org_id == "o"


@pytest.mark.parametrize(
    "change",
    [{"env": "production"}, {"jwt_jwks_url": "https://clerk.example.com/jwks"}],
    ids=["production", "jwks"],
)
def test_mint_token_command_refuses_configs_it_cannot_serve(
    settings: Settings, change: dict[str, Any]
) -> None:
    with pytest.raises(ConfigError):
        mint_token_command(replace(settings, **change), "org_demo")


def test_mint_token_command_refuses_a_foreign_public_key(
    settings: Settings, tmp_path: Path
) -> None:
    ensure_local_keys(tmp_path / "x")
    foreign = (tmp_path / "x" / auth.PUBLIC_KEY_FILE).read_text()
    with pytest.raises(ConfigError, match="COLONY_JWT_PUBLIC_KEY"):
        mint_token_command(replace(settings, jwt_public_key=foreign), "org_demo")


# ----------------------------------------------------------------------------- over HTTP

AUTH_SOURCE = """
from colony.runtime.auth import verify_bearer
from colony.runtime.edge import http_json

SETTINGS = None


@http_json(methods=("GET",))
def whoami(req):
    principal = verify_bearer(req.authorization, SETTINGS)
    return {"org_id": principal.org_id, "user_id": principal.user_id}
"""


def test_bearer_errors_over_http(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    name = f"fn_{uuid.uuid4().hex[:10]}"
    source = tmp_path / f"{name}.py"
    source.write_text(textwrap.dedent(AUTH_SOURCE))
    app = functions_framework.create_app("whoami", str(source), "http")
    sys.modules[name].SETTINGS = settings  # type: ignore[attr-defined]
    monkeypatch.delitem(sys.modules, name)
    client = app.test_client()

    ok = client.get("/", headers={"Authorization": bearer(mint_local_token(tmp_path, "org_a"))})
    assert ok.status_code == 200 and ok.get_json() == {"org_id": "org_a", "user_id": "local-user"}
    cases = {
        None: (401, "unauthorized"),
        bearer("garbage"): (401, "unauthorized"),
        bearer(sign(tmp_path, claims(exp=int((NOW - timedelta(hours=1)).timestamp())))): (
            401,
            "unauthorized",
        ),
        bearer(sign(tmp_path, claims(org_id=None))): (401, "unauthorized"),
    }
    for header, (status, code) in cases.items():
        response = client.get("/", headers={"Authorization": header} if header else {})
        assert response.status_code == status
        assert response.get_json()["error"]["code"] == code


# ----------------------------------------------------------------------------- approval links


def test_approval_token_round_trip() -> None:
    token = sign_approval_token(
        KEY, "org_a", "item-1", "approve", NOW + timedelta(days=2), recipient="user_1"
    )
    assert token.count(".") == 1 and "=" not in token
    claim = verify_approval_token(KEY, token, NOW)
    assert claim == ApprovalClaim("org_a", "item-1", "approve", "user_1", claim.nonce)
    assert len(claim.nonce) >= 16
    assert verify_approval_token(KEY.encode(), token, NOW).action == "approve"
    again = sign_approval_token(
        KEY, "org_a", "item-1", "approve", NOW + timedelta(days=2), recipient="user_1"
    )
    assert verify_approval_token(KEY, again, NOW).nonce != claim.nonce  # each link is its own


def test_approval_token_expires() -> None:
    token = sign_approval_token(
        KEY, "org_a", "item-1", "reject", NOW + timedelta(minutes=5), recipient="user_1"
    )
    assert verify_approval_token(KEY, token, NOW + timedelta(minutes=4)).item_id == "item-1"
    with pytest.raises(Unauthorized, match="expired"):
        verify_approval_token(KEY, token, NOW + timedelta(minutes=5))


def test_approval_token_tampering_is_refused() -> None:
    token = sign_approval_token(
        KEY, "org_a", "item-1", "approve", NOW + timedelta(days=1), recipient="user_1"
    )
    payload, signature = token.split(".")
    body = json.loads(base64.urlsafe_b64decode(payload + "=="))
    forged_payload = _segment({**body, "o": "org_b"}).rstrip("=")
    other_recipient = _segment({**body, "r": "user_2"}).rstrip("=")
    flipped = signature[:-2] + ("A" if signature[-2] != "A" else "B") + signature[-1]
    for forged in (
        f"{forged_payload}.{signature}",
        f"{other_recipient}.{signature}",
        f"{payload}.{flipped}",
        f"{payload}.",
        payload,
        "",
        f"{payload}.{signature}x",
        f"{payload}.ü{signature}",
    ):
        with pytest.raises(Unauthorized):
            verify_approval_token(KEY, forged, NOW)


def test_approval_token_wrong_key() -> None:
    token = sign_approval_token(
        KEY, "org_a", "item-1", "approve", NOW + timedelta(days=1), recipient="user_1"
    )
    with pytest.raises(Unauthorized, match="signature"):
        verify_approval_token(KEY[::-1], token, NOW)


def test_approval_token_refuses_weak_keys_and_bad_inputs() -> None:
    later = NOW + timedelta(days=1)
    with pytest.raises(ConfigError):
        sign_approval_token("short", "org_a", "item-1", "approve", later, recipient="user_1")
    with pytest.raises(ValidationFailed):
        sign_approval_token(
            KEY, "org_a", "item-1", "approve", later.replace(tzinfo=None), recipient="user_1"
        )
    with pytest.raises(ValidationFailed):
        sign_approval_token(KEY, "org_a", "item-1", "DROP TABLE", later, recipient="user_1")
    token = sign_approval_token(KEY, "org_a", "item-1", "approve", later, recipient="user_1")
    with pytest.raises(ValidationFailed):
        verify_approval_token(KEY, token, NOW.replace(tzinfo=None))


# ----------------------------------------------------------------------------- Google OIDC

AUDIENCE = "https://colony-campaign-resume.example.run.app"
INVOKER = "invoker@colony.iam.gserviceaccount.com"


class GoogleCerts:
    """A local stand-in for Google's OIDC JWKS endpoint (``/oauth2/v3/certs``), serving one
    RSA key as Google does (``kid``, ``alg``, ``use``); every fetch is recorded."""

    ROUTE = "google.certs"

    def __init__(self, server: WireServer, key: rsa.RSAPrivateKey, kid: str = "g-1") -> None:
        jwk = jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
        self.document = {"keys": [{**jwk, "kid": kid, "alg": "RS256", "use": "sig"}]}
        self.server = server
        server.add_route(Route.of(self.ROUTE, "GET", r"/oauth2/v3/certs", self._serve))

    def _serve(self, request: RecordedRequest) -> Reply:
        return Reply(200, self.document, {"Cache-Control": "public, max-age=19800"})

    @property
    def url(self) -> str:
        return f"{self.server.base_url}/oauth2/v3/certs"

    @property
    def fetches(self) -> int:
        return len(self.server.requests_to(self.ROUTE))


@pytest.fixture
def google_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(65537, 2048)


@pytest.fixture
def google(
    server: WireServer, google_key: rsa.RSAPrivateKey, no_ambient_config: None
) -> GoogleCerts:
    return GoogleCerts(server, google_key)


@pytest.fixture
def production(google: GoogleCerts) -> Settings:
    return Settings(
        env="production",
        db_mode="dsn",
        invoker_service_account=INVOKER,
        google_jwks_url=google.url,
    )


def google_token(key: rsa.RSAPrivateKey, kid: str = "g-1", **overrides: Any) -> str:
    body = {
        "iss": "https://accounts.google.com",
        "aud": AUDIENCE,
        "azp": "1234",
        "sub": "1234",
        "email": INVOKER,
        "email_verified": True,
        "iat": int(NOW.timestamp()),
        "exp": int((NOW + timedelta(minutes=5)).timestamp()),
    }
    body.update(overrides)
    return jwt.encode(
        {k: v for k, v in body.items() if v is not None}, key, "RS256", headers={"kid": kid}
    )


def test_oidc_local_mode_needs_no_token() -> None:
    assert verify_google_oidc(None, AUDIENCE, Settings()) is None


def test_oidc_valid_token_in_production(
    google_key: rsa.RSAPrivateKey, production: Settings
) -> None:
    claims = verify_google_oidc(bearer(google_token(google_key)), AUDIENCE, production)
    assert claims is not None and claims["email"] == INVOKER
    short_issuer = google_token(google_key, iss="accounts.google.com")  # Google uses both
    assert verify_google_oidc(bearer(short_issuer), AUDIENCE, production) is not None


def test_oidc_certificates_are_fetched_once_for_many_verifications(
    google_key: rsa.RSAPrivateKey, google: GoogleCerts, production: Settings
) -> None:
    """Google's keys are cached per process: not one fetch per request (nor per thread)."""
    tokens = [google_token(google_key, sub=str(i)) for i in range(12)]
    for token in tokens[:6]:
        assert verify_google_oidc(bearer(token), AUDIENCE, production) is not None
    verified: list[Mapping[str, Any] | None] = []
    threads = [
        threading.Thread(
            target=lambda t=token: verified.append(
                verify_google_oidc(bearer(t), AUDIENCE, production)
            )
        )
        for token in tokens[6:]
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(verified) == 6 and all(verified)
    assert google.fetches == 1


@pytest.mark.parametrize(
    "overrides",
    [
        {"aud": "https://someone-else.run.app"},
        {"email": "attacker@evil.iam.gserviceaccount.com"},
        {"email": None},
        {"email_verified": False},
        {"email_verified": None},
        {"iss": "https://evil.example.com"},
        {"iss": None},
        {"exp": int((NOW - timedelta(hours=1)).timestamp())},
    ],
    ids=[
        "audience",
        "email",
        "no-email",
        "unverified",
        "no-verified",
        "issuer",
        "no-issuer",
        "expired",
    ],
)
def test_oidc_bad_tokens_in_production(
    google_key: rsa.RSAPrivateKey, production: Settings, overrides: dict[str, Any]
) -> None:
    with pytest.raises(Unauthorized):
        verify_google_oidc(bearer(google_token(google_key, **overrides)), AUDIENCE, production)


def test_oidc_missing_or_foreign_token_in_production(
    google_key: rsa.RSAPrivateKey, google: GoogleCerts, production: Settings
) -> None:
    for header in (None, "Bearer nonsense"):
        with pytest.raises(Unauthorized):
            verify_google_oidc(header, AUDIENCE, production)
    forger = rsa.generate_private_key(65537, 2048)
    with pytest.raises(Unauthorized, match="does not verify"):  # Google's kid, another key
        verify_google_oidc(bearer(google_token(forger)), AUDIENCE, production)
    with pytest.raises(Unauthorized, match="unknown key"):
        verify_google_oidc(bearer(google_token(forger, kid="g-2")), AUDIENCE, production)
    hs256 = jwt.encode({"aud": AUDIENCE}, "k" * 32, "HS256", headers={"kid": "g-1"})
    with pytest.raises(Unauthorized, match="RS256"):
        verify_google_oidc(bearer(hs256), AUDIENCE, production)


def test_oidc_cert_fetch_failure_is_upstream(
    google_key: rsa.RSAPrivateKey, server: WireServer, production: Settings
) -> None:
    server.script(Reply(503, {"error": "unavailable"}))
    with pytest.raises(UpstreamError):
        verify_google_oidc(bearer(google_token(google_key)), AUDIENCE, production)
    # nothing bad was cached: the next request fetches again and verifies
    assert verify_google_oidc(bearer(google_token(google_key)), AUDIENCE, production)


def test_oidc_needs_the_invoker_account_configured(
    google_key: rsa.RSAPrivateKey, production: Settings
) -> None:
    unset = replace(production, invoker_service_account=None)
    with pytest.raises(ConfigError, match="COLONY_INVOKER_SERVICE_ACCOUNT"):
        verify_google_oidc(bearer(google_token(google_key)), AUDIENCE, unset)


def test_google_jwks_url_setting() -> None:
    assert Settings.from_env({}).google_jwks_url == "https://www.googleapis.com/oauth2/v3/certs"
    local = Settings.from_env({"COLONY_GOOGLE_JWKS_URL": "http://127.0.0.1:9/certs"})
    assert local.google_jwks_url == "http://127.0.0.1:9/certs"
    production = {
        "COLONY_ENV": "production",
        "COLONY_DB_MODE": "dsn",
        "COLONY_DB_DSN": "postgresql://x/y",
        "COLONY_INVOKER_SERVICE_ACCOUNT": INVOKER,
    }
    with pytest.raises(ConfigError, match="COLONY_GOOGLE_JWKS_URL"):
        Settings.from_env({**production, "COLONY_GOOGLE_JWKS_URL": "http://127.0.0.1:9/certs"})
