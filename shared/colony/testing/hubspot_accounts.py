"""Who may call the HubSpot stand-in, and how often: one public app's OAuth (codes, access
tokens that expire, refresh tokens that can be revoked) and HubSpot's published limits per
app and portal, enforced as HubSpot does, on a clock the test owns.

Limits (``Limits``; HubSpot's for a public OAuth app): a burst of 110 requests in any rolling
10 seconds, a daily count, and 5 searches a second. A request over one is answered 429 with
HubSpot's body (``policyName`` ``TEN_SECONDLY_ROLLING``, ``DAILY`` or ``SECONDLY``) and a
``Retry-After`` (seconds until a slot frees: the oldest request leaves the window, or the
day ends); every answer carries the ``X-HubSpot-RateLimit-*`` headers. (HubSpot itself leaves
the daily headers off OAuth requests; the stand-in sends them so a test can read them.)

``ManualClock`` is the test's clock: nothing here sleeps. An adapter handed
``clock.sleep`` "waits" by moving that clock on, so back-off is exercised for real and takes
no time.
"""

from __future__ import annotations

import secrets
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from colony.adapters.hubspot_oauth import SCOPES as APP_SCOPES

SCOPES = (*APP_SCOPES, "sales-email-read")  # what the stand-in's app may be granted
DAY = 86_400.0


class ManualClock:
    """Seconds, moved on only by ``advance`` (or ``sleep``, the adapter's wait)."""

    def __init__(self, start: float = 1_000.0) -> None:
        self.now = start
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.advance(seconds)


@dataclass(frozen=True)
class Limits:
    burst: int = 110
    window: float = 10.0
    daily: int = 250_000
    searches_per_second: int = 5


@dataclass
class Grant:
    """What a person allowed: the app on ``portal_id``, with ``scopes``."""

    portal_id: str
    scopes: tuple[str, ...]
    user: str


@dataclass
class _Usage:
    recent: deque[float] = field(default_factory=deque)
    searches: deque[float] = field(default_factory=deque)
    day: int = -1
    today: int = 0


def token_error(status: str, message: str) -> dict[str, Any]:
    """The body of a refused ``POST /oauth/v1/token``."""
    return {"status": status, "message": message, "correlationId": secrets.token_hex(8)}


def api_error(message: str, category: str, **extra: Any) -> dict[str, Any]:
    """The body of a refused CRM call."""
    body = {"status": "error", "message": message, "correlationId": secrets.token_hex(8)}
    return {**body, "category": category, **extra}


class HubSpotAccounts:
    """The app (``client_id`` / ``client_secret``), its grants and its usage per portal."""

    def __init__(
        self,
        clock: Callable[[], float],
        *,
        client_id: str = "colony-app",
        client_secret: str = "colony-app-secret",
        limits: Limits | None = None,
        access_ttl: int = 1800,
    ) -> None:
        self.clock, self.limits, self.access_ttl = clock, limits or Limits(), access_ttl
        self.client_id, self.client_secret = client_id, client_secret
        self._codes: dict[str, tuple[Grant, str]] = {}
        self._refresh: dict[str, Grant] = {}
        self._access: dict[str, tuple[Grant, float]] = {}
        self._usage: dict[str, _Usage] = {}
        self.consenting: Grant | None = None  # who "is signed in" at the authorize page
        self.withheld: set[str] = set()  # scopes the grant leaves out (an older install's)

    # -- OAuth ---------------------------------------------------------------------------------

    def consent(self, redirect_uri: str, scopes: tuple[str, ...]) -> str:
        """The code HubSpot's authorize page hands back once ``consenting`` allows the app."""
        if self.consenting is None:
            raise LookupError("nobody is signed in to HubSpot to allow the app")
        code = secrets.token_urlsafe(16)
        granted = tuple(s for s in scopes if s not in self.withheld)
        grant = Grant(self.consenting.portal_id, granted, self.consenting.user)
        self._codes[code] = (grant, redirect_uri)
        return code

    def issue(self, portal_id: str, scopes: tuple[str, ...] = SCOPES) -> dict[str, Any]:
        """Tokens for the app on ``portal_id`` as if a person had allowed it (tests that are
        not about the consent itself)."""
        code = secrets.token_urlsafe(16)
        self._codes[code] = (Grant(portal_id, scopes, "owner@portal.example"), "urn:test")
        form = {"client_id": self.client_id, "client_secret": self.client_secret}
        form |= {"grant_type": "authorization_code", "code": code, "redirect_uri": "urn:test"}
        return self.token(form)[1]

    def token(self, form: Mapping[str, str]) -> tuple[int, dict[str, Any]]:
        """``POST /oauth/v1/token``: (status, body)."""
        if form.get("client_id") != self.client_id:
            return 400, token_error("BAD_CLIENT_ID", "missing or unknown client id")
        if form.get("client_secret") != self.client_secret:
            return 400, token_error("BAD_CLIENT_SECRET", "missing or invalid client secret")
        grant_type = form.get("grant_type")
        if grant_type == "authorization_code":
            found = self._codes.pop(form.get("code") or "", None)
            if found is None:
                return 400, token_error("BAD_AUTH_CODE", "missing or unknown auth code")
            grant, redirect_uri = found
            if form.get("redirect_uri") != redirect_uri:
                return 400, token_error("BAD_REDIRECT_URI", "redirect_uri does not match")
            refresh = secrets.token_urlsafe(24)
            self._refresh[refresh] = grant
        elif grant_type == "refresh_token":
            refresh = form.get("refresh_token") or ""
            if refresh not in self._refresh:
                return 400, token_error("BAD_REFRESH_TOKEN", "missing or unknown refresh token")
            grant = self._refresh[refresh]
        else:
            return 400, token_error("BAD_GRANT_TYPE", "unknown grant_type")
        access = secrets.token_urlsafe(24)
        self._access[access] = (grant, self.clock() + self.access_ttl)
        body = {"token_type": "bearer", "refresh_token": refresh, "access_token": access}
        return 200, {**body, "expires_in": self.access_ttl}

    def access_info(self, token: str) -> dict[str, Any] | None:
        """``GET /oauth/v1/access-tokens/{token}`` (None: unknown or expired)."""
        found = self._access.get(token)
        if found is None or found[1] <= self.clock():
            return None
        grant, expires = found
        return {
            "token": token,
            "user": grant.user,
            "hub_domain": f"portal-{grant.portal_id}.example",
            "scopes": list(grant.scopes),
            "hub_id": int(grant.portal_id),
            "app_id": 1001,
            "expires_in": int(expires - self.clock()),
            "user_id": 7,
            "token_type": "access",
        }

    def revoke(self, refresh_token: str) -> None:
        """``DELETE /oauth/v1/refresh-tokens/{token}``: it and its access tokens stop."""
        grant = self._refresh.pop(refresh_token, None)
        if grant is not None:
            self._access = {t: a for t, a in self._access.items() if a[0] is not grant}

    def uninstall(self, portal_id: str) -> None:
        """The portal removed the app: every token of it is refused from now on."""
        for token, grant in list(self._refresh.items()):
            if grant.portal_id == portal_id:
                self.revoke(token)

    def expire_access_tokens(self) -> None:
        """Every access token issued so far runs out now (a refresh still works)."""
        now = self.clock()
        self._access = {t: (g, min(e, now)) for t, (g, e) in self._access.items()}

    def caller(self, token: str) -> tuple[Grant | None, dict[str, Any] | None]:
        """The grant behind a bearer ``token``, or the 401 body HubSpot answers."""
        found = self._access.get(token)
        if found is None:
            return None, api_error(
                "Authentication credentials not found. This API supports OAuth 2.0 authentication.",
                "INVALID_AUTHENTICATION",
            )
        grant, expires = found
        if expires <= self.clock():
            minutes = max(1, int((self.clock() - expires) // 60))
            return None, api_error(
                f"The OAuth token used to make this call expired {minutes} minute(s) ago.",
                "EXPIRED_AUTHENTICATION",
            )
        return grant, None

    # -- limits ----------------------------------------------------------------------------------

    def take(self, portal_id: str, *, search: bool = False) -> tuple[str, float] | None:
        """Count one request of the app on the portal; (policy, seconds to wait) if over."""
        now, limits = self.clock(), self.limits
        usage = self._usage.setdefault(portal_id, _Usage())
        while usage.recent and usage.recent[0] <= now - limits.window:
            usage.recent.popleft()
        while usage.searches and usage.searches[0] <= now - 1.0:
            usage.searches.popleft()
        day = int(now // DAY)
        if day != usage.day:
            usage.day, usage.today = day, 0
        if usage.today >= limits.daily:
            return "DAILY", (day + 1) * DAY - now
        if len(usage.recent) >= limits.burst:
            return "TEN_SECONDLY_ROLLING", usage.recent[0] + limits.window - now
        if search and len(usage.searches) >= limits.searches_per_second:
            return "SECONDLY", usage.searches[0] + 1.0 - now
        usage.recent.append(now)
        usage.today += 1
        if search:
            usage.searches.append(now)
        return None

    def headers(self, portal_id: str) -> dict[str, str]:
        """The ``X-HubSpot-RateLimit-*`` headers after this portal's latest request."""
        usage = self._usage.setdefault(portal_id, _Usage())
        limits = self.limits
        return {
            "X-HubSpot-RateLimit-Interval-Milliseconds": str(int(limits.window * 1000)),
            "X-HubSpot-RateLimit-Max": str(limits.burst),
            "X-HubSpot-RateLimit-Remaining": str(max(0, limits.burst - len(usage.recent))),
            "X-HubSpot-RateLimit-Daily": str(limits.daily),
            "X-HubSpot-RateLimit-Daily-Remaining": str(max(0, limits.daily - usage.today)),
        }

    def used(self, portal_id: str) -> int:
        """Requests counted against the portal's daily limit today."""
        return self._usage.get(portal_id, _Usage()).today


def peak(times: list[float], window: float = 10.0) -> int:
    """The most requests in any rolling ``window`` seconds of ``times`` (ascending): what
    HubSpot's rolling limit would have counted at its busiest."""
    most, start = 0, 0
    for end, moment in enumerate(times):
        while moment - times[start] >= window:
            start += 1
        most = max(most, end - start + 1)
    return most
