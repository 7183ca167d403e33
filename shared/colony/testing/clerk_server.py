"""A local stand-in for Clerk's Frontend API: short-lived RS256 session tokens for the
/overview page, and the JWKS our functions verify them with.

Routes (Clerk's shapes):

- ``GET /.well-known/jwks.json``: the instance's public key (``COLONY_JWT_JWKS_URL``);
- ``GET /v1/client``: the browser's client (found by its ``__client`` cookie) with its
  sessions and ``last_active_session_id``, as clerk-js reads it when a page opens;
- ``POST /v1/client/sessions/{sid}/tokens``: a fresh session token ``{"object": "token",
  "jwt"}`` for an active session of that client; anything else is Clerk's 401
  (``{"errors": [{"code": "authentication_invalid", …}]}``).

Tokens carry what Clerk's do: ``sub``, ``sid``, ``iss`` (this server's URL), ``azp`` (the
page's ``Origin``), ``iat``/``nbf``/``exp`` (``ttl_seconds`` apart) and the v2 org claim
``o``. Answers to a cross-origin page carry ``Access-Control-Allow-Origin`` (that origin) and
``Access-Control-Allow-Credentials``, as Clerk's do for an allowed origin.

And its Backend API's membership list (``GET /v1/organizations/{org}/memberships``, with
``limit`` 1..500 and ``offset``): ``{"data": [OrganizationMembership], "total_count"}`` for
``Authorization: Bearer <secret_key>``; another key is Clerk's 401, an org it does not have
its 404 (``resource_not_found``). Its orgs and memberships are ``orgs``
(``colony.testing.clerk_memberships``), whose changes return the webhook events Clerk sends.

Not Clerk's: ``sign_in_url`` stands in for the Account Portal: opening it sets the client
cookie for a new session and redirects to the page. ``end_sessions`` makes every later
refresh a 401 (the person signed out elsewhere, or an admin revoked the session).
"""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

from colony.testing.clerk_memberships import ClerkOrgs
from colony.testing.wire import ProviderServer, RecordedRequest, Reply, Route

COOKIE = "__client"
KID = "ins_colony_stand_in"


@dataclass
class ClerkSession:
    id: str
    user_id: str
    org_id: str
    client: str
    active: bool = True
    minted: list[dict[str, Any]] = field(default_factory=list)  # the claims of each token


class ClerkFrontendServer(ProviderServer):
    """Clerk's Frontend API on 127.0.0.1, minting ``ttl_seconds`` session tokens."""

    unauthorised = ("authentication_invalid", "Unauthorized request")
    rate_limited = ("too_many_requests", "Too many requests, please try again later.")

    def __init__(self, ttl_seconds: int = 60) -> None:
        self.ttl_seconds = ttl_seconds
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        jwk = jwt.algorithms.RSAAlgorithm.to_jwk(self._key.public_key(), as_dict=True)
        self._jwks = {"keys": [{**jwk, "kid": KID, "alg": "RS256", "use": "sig"}]}
        self.sessions: dict[str, ClerkSession] = {}
        self.refusals = 0
        self.secret_key = "sk_test_" + secrets.token_hex(16)
        self.orgs = ClerkOrgs()
        self._state = threading.Lock()
        super().__init__(
            routes=[
                Route.of("clerk.jwks", "GET", r"/\.well-known/jwks\.json", self._keys),
                Route.of("clerk.client", "GET", r"/v1/client", self._client),
                Route.of(
                    "clerk.session.tokens",
                    "POST",
                    r"/v1/client/sessions/(?P<sid>[A-Za-z0-9_]+)/tokens",
                    self._tokens,
                ),
                Route.of("clerk.sign_in", "GET", r"/v1/dev/sign_in", self._sign_in),
                Route.of(
                    "clerk.backend.memberships",
                    "GET",
                    r"/v1/organizations/(?P<org>[A-Za-z0-9_]+)/memberships",
                    self._memberships,
                ),
            ]
        )

    def provider_error(self, status: int, code: str, message: str) -> Reply:
        error = {"code": code, "message": message, "long_message": message}
        return Reply(status, {"errors": [error], "clerk_trace_id": secrets.token_hex(8)})

    @property
    def jwks_url(self) -> str:
        return f"{self.url}/.well-known/jwks.json"

    def sign_in_url(self, user_id: str, org_id: str, redirect_url: str) -> str:
        return f"{self.url}/v1/dev/sign_in?" + urlencode(
            {"user_id": user_id, "org_id": org_id, "redirect_url": redirect_url}
        )

    def end_sessions(self) -> None:
        with self._state:
            for session in self.sessions.values():
                session.active = False

    def refreshes(self) -> list[dict[str, Any]]:
        """The claims of every token minted through the tokens route, in order."""
        with self._state:
            return [c for s in self.sessions.values() for c in s.minted if c["via"] == "refresh"]

    # -- routes ---------------------------------------------------------------------------------

    def _keys(self, request: RecordedRequest) -> Reply:
        return Reply(200, self._jwks, {"Cache-Control": "public, max-age=3600"})

    def _sign_in(self, request: RecordedRequest) -> Reply:
        q = {k: v[0] for k, v in request.query.items()}
        if not (q.get("user_id") and q.get("org_id") and q.get("redirect_url")):
            return self.provider_error(422, "form_param_missing", "user_id, org_id, redirect_url")
        session = ClerkSession(
            "sess_" + secrets.token_hex(8), q["user_id"], q["org_id"], secrets.token_hex(16)
        )
        with self._state:
            self.sessions[session.id] = session
        cookie = f"{COOKIE}={session.client}; Path=/; HttpOnly; SameSite=Lax"
        return Reply(303, b"", {"Location": q["redirect_url"], "Set-Cookie": cookie})

    def _client(self, request: RecordedRequest) -> Reply:
        client = _cookie(request, COOKIE)
        with self._state:
            mine = [s for s in self.sessions.values() if s.client == client and s.active]
        if not mine:
            return self._cors(request, Reply(200, {"response": None, "client": None}))
        body = {
            "object": "client",
            "id": "client_" + mine[-1].client[:12],
            "sessions": [{"object": "session", "id": s.id, "status": "active"} for s in mine],
            "last_active_session_id": mine[-1].id,
        }
        return self._cors(request, Reply(200, {"response": body, "client": None}))

    def _tokens(self, request: RecordedRequest) -> Reply:
        client = _cookie(request, COOKIE)
        with self._state:
            session = self.sessions.get(request.params["sid"])
            if session is None or session.client != client or not session.active:
                self.refusals += 1
                session = None
        if session is None:
            return self._cors(request, self.provider_error(401, *self.unauthorised))
        token = self.mint(session, request.header("origin"), via="refresh")
        return self._cors(request, Reply(200, {"object": "token", "jwt": token}))

    def _memberships(self, request: RecordedRequest) -> Reply:
        if request.header("authorization") != f"Bearer {self.secret_key}":
            return self.provider_error(401, *self.unauthorised)
        org = request.params["org"]
        if org not in self.orgs.orgs:
            return self.provider_error(404, "resource_not_found", "Not Found")
        q = {k: v[0] for k, v in request.query.items()}
        try:
            limit, offset = int(q.get("limit", "10")), int(q.get("offset", "0"))
        except ValueError:
            return self.provider_error(422, "form_param_format_invalid", "limit, offset")
        if not 1 <= limit <= 500 or offset < 0:
            return self.provider_error(422, "form_param_value_invalid", "limit, offset")
        rows = self.orgs.listed(org)
        return Reply(200, {"data": rows[offset : offset + limit], "total_count": len(rows)})

    # -- tokens ---------------------------------------------------------------------------------

    def mint(self, session: ClerkSession, origin: str | None, *, via: str) -> str:
        now = int(time.time())
        claims: dict[str, Any] = {
            "sub": session.user_id,
            "sid": session.id,
            "iss": self.url,
            "iat": now,
            "nbf": now - 5,
            "exp": now + self.ttl_seconds,
            "v": 2,
            "o": {"id": session.org_id, "rol": "admin"},
        }
        if origin:
            claims["azp"] = origin
        with self._state:
            session.minted.append({**claims, "via": via, "at": time.time()})
        return jwt.encode(claims, self._key, algorithm="RS256", headers={"kid": KID})

    def _cors(self, request: RecordedRequest, reply: Reply) -> Reply:
        origin = request.header("origin")
        if not origin:
            return reply
        headers = {
            **reply.headers,
            "Access-Control-Allow-Origin": origin,
            "Access-Control-Allow-Credentials": "true",
            "Vary": "Origin",
        }
        return Reply(reply.status, reply.body, headers)


def _cookie(request: RecordedRequest, name: str) -> str | None:
    for part in (request.header("cookie") or "").split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return None
