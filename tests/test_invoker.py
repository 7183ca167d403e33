"""Internal functions check their caller in code (issue 14 item 2): every Pub/Sub push
function and every Cloud Tasks / Scheduler target refuses a request without the invoker's
Google OIDC token, and runs the flow with it.

The functions run as real ``functions-framework`` servers in production mode; Google's JWKS
endpoint is a local HTTPS stand-in (production refuses a plain-HTTP one) whose self-signed
certificate the servers trust through ``SSL_CERT_FILE``.
"""

from __future__ import annotations

import base64
import json
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from colony.errors import ConfigError
from colony.local.functions import FunctionServers
from colony.registry.functions import FUNCTIONS
from colony.runtime.edge import pubsub_handler
from colony.runtime.edge.invoker import invoker_only
from colony.store import fetch_all
from colony.testing.certs import self_signed
from tests.conftest import APP_ROLE, PgDB

ORG = "org_invoker"
INVOKER = "colony-invoker@colony-test.iam.gserviceaccount.com"
INTERNAL = sorted(name for name, f in FUNCTIONS.items() if not f.public)


@dataclass
class GoogleStandIn:
    url: str
    ca_file: Path
    key: rsa.RSAPrivateKey

    def token(self, audience: str, **overrides: Any) -> str:
        now = datetime.now(UTC)
        body: dict[str, Any] = {
            "iss": "https://accounts.google.com",
            "aud": audience,
            "sub": "1234",
            "azp": "1234",
            "email": INVOKER,
            "email_verified": True,
            "iat": int(now.timestamp()),
            "exp": int((now + timedelta(minutes=5)).timestamp()),
        }
        body.update(overrides)
        claims = {k: v for k, v in body.items() if v is not None}
        return jwt.encode(claims, self.key, "RS256", headers={"kid": "g-1"})


@pytest.fixture(scope="module")
def google(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GoogleStandIn]:
    """Google's ``/oauth2/v3/certs`` over HTTPS, serving one RSA signing key."""
    key = rsa.generate_private_key(65537, 2048)
    jwk = jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
    document = json.dumps({"keys": [{**jwk, "kid": "g-1", "alg": "RS256", "use": "sig"}]})

    class Certs(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200 if self.path == "/oauth2/v3/certs" else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(document.encode())

        def log_message(self, *args: Any) -> None:
            pass

    cert_file, key_file = self_signed(tmp_path_factory.mktemp("google"), "google")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Certs)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"https://127.0.0.1:{httpd.server_address[1]}/oauth2/v3/certs"
        yield GoogleStandIn(url, cert_file, key)
    finally:
        httpd.shutdown()
        httpd.server_close()


def _production_env(testdb: PgDB, tmp_path: Path, google: GoogleStandIn) -> dict[str, str]:
    return {
        "COLONY_ENV": "production",
        "COLONY_DB_MODE": "dsn",
        "COLONY_DB_DSN": testdb.dsn(APP_ROLE),
        "COLONY_TRANSPORT": "local",
        "COLONY_DATA_DIR": str(tmp_path),
        "COLONY_INVOKER_SERVICE_ACCOUNT": INVOKER,
        "COLONY_GOOGLE_JWKS_URL": google.url,
        "SSL_CERT_FILE": str(google.ca_file),  # the servers trust the stand-in, nothing else
    }


def _rejections(testdb: PgDB) -> list[dict[str, Any]]:
    owner = testdb.owner_connection()
    try:
        sql = "SELECT function, event_id, reason FROM rejected_deliveries ORDER BY id"
        return fetch_all(owner.cursor(), sql)
    finally:
        owner.close()


def _bad_headers(google: GoogleStandIn, audience: str) -> dict[str, dict[str, str]]:
    def bearer(**overrides: Any) -> dict[str, str]:
        return {"Authorization": f"Bearer {google.token(audience, **overrides)}"}

    forger = rsa.generate_private_key(65537, 2048)
    forged = jwt.encode(
        {"iss": "https://accounts.google.com", "aud": audience, "email": INVOKER},
        forger,
        "RS256",
        headers={"kid": "g-1"},
    )
    long_ago = datetime.now(UTC) - timedelta(hours=2)
    return {
        "missing": {},
        "not_bearer": {"Authorization": "Basic aW52b2tlcjp4"},
        "wrong_audience": bearer(aud="https://someone-else.example.run.app"),
        "wrong_issuer": bearer(iss="https://evil.example.com"),
        "wrong_email": bearer(email="colony-chat@colony-test.iam.gserviceaccount.com"),
        "unverified_email": bearer(email_verified=False),
        "expired": bearer(
            iat=int(long_ago.timestamp()), exp=int((long_ago + timedelta(minutes=5)).timestamp())
        ),
        "forged_signature": {"Authorization": f"Bearer {forged}"},
    }


def _push(event: dict[str, Any], message_id: str) -> dict[str, Any]:
    data = base64.b64encode(json.dumps(event).encode()).decode()
    return {
        "message": {"data": data, "messageId": message_id, "attributes": {"org_id": ORG}},
        "subscription": "projects/colony-test/subscriptions/campaign-push",
    }


def test_push_and_task_targets_refuse_unverified_callers_over_http(
    testdb: PgDB, tmp_path: Path, google: GoogleStandIn
) -> None:
    env = _production_env(testdb, tmp_path, google)
    resume = {"kind": "campaign.resume", "org_id": ORG, "campaign_id": "camp_nobody"}
    names = ["campaign", "campaign-resume"]
    with (
        FunctionServers(env, names, log_dir=tmp_path) as servers,
        httpx.Client(timeout=60) as http,
    ):
        push_url, task_url = servers.urls["campaign"], servers.urls["campaign-resume"]
        for case, headers in _bad_headers(google, push_url).items():
            reply = http.post(push_url, json=_push(resume, f"m-{case}"), headers=headers)
            assert reply.status_code == 401, (case, reply.text)
            assert reply.json()["error"]["code"] == "unauthorized", case
            assert reply.headers["WWW-Authenticate"] == "Bearer"
        for case, headers in _bad_headers(google, task_url).items():
            reply = http.post(task_url, json=resume, headers=headers)
            assert reply.status_code == 401, (case, reply.text)
            assert reply.json()["error"]["code"] == "unauthorized", case
        # refused: the flow never ran, and an unverified caller wrote nothing
        assert _rejections(testdb) == []
        assert "m-missing" in (tmp_path / "campaign.log").read_text()  # the refusal is logged

        # the invoker's token for each function's own URL: the flow runs (and finds nothing)
        ok = {"Authorization": f"Bearer {google.token(push_url)}"}
        reply = http.post(push_url, json=_push(resume, "m-ok"), headers=ok)
        assert reply.is_success, reply.text
        assert [(r["event_id"], r["reason"].split(":")[0]) for r in _rejections(testdb)] == [
            ("m-ok", "not_found")
        ]
        ok = {"Authorization": f"Bearer {google.token(task_url)}"}
        reply = http.post(task_url, json=resume, headers=ok)
        assert reply.status_code == 404, reply.text
        assert "camp_nobody" in reply.json()["error"]["message"]
        # a token for the push function is not one for the task target (audience)
        reply = http.post(
            task_url, json=resume, headers={"Authorization": f"Bearer {google.token(push_url)}"}
        )
        assert reply.status_code == 401, reply.text


def test_every_internal_function_refuses_a_caller_without_the_token(
    testdb: PgDB, tmp_path: Path, google: GoogleStandIn
) -> None:
    """All of them, by the registry: a new internal function cannot forget the check."""
    env = _production_env(testdb, tmp_path, google)
    with (
        FunctionServers(env, INTERNAL, log_dir=tmp_path) as servers,
        httpx.Client(timeout=60) as http,
    ):
        for name in INTERNAL:
            url = servers.urls[name]
            body = _push({"kind": "nonsense"}, f"m-{name}") if FUNCTIONS[name].topic else {}
            bad = _bad_headers(google, url)
            for case in ("missing", "wrong_audience", "wrong_email"):
                headers = bad[case]
                reply = http.post(url, json=body, headers=headers)
                assert reply.status_code == 401, (name, case, reply.text)
                assert reply.json()["error"]["code"] == "unauthorized", (name, case)
            # with the token the request gets past the check: a push of garbage is
            # acknowledged and recorded, a task's empty body is a 400
            ok = {"Authorization": f"Bearer {google.token(url)}"}
            reply = http.post(url, json=body, headers=ok)
            if FUNCTIONS[name].topic:
                assert reply.is_success, (name, reply.text)
            else:
                assert reply.status_code == 400, (name, reply.text)
    pushes = sorted(n for n in INTERNAL if FUNCTIONS[n].topic)
    assert sorted(r["function"] for r in _rejections(testdb)) == pushes


def test_only_internal_functions_can_require_the_invoker() -> None:
    with pytest.raises(ConfigError, match="public"):
        invoker_only("chat")
    with pytest.raises(ConfigError, match="public"):
        pubsub_handler("approval", lambda event, event_id: None)
