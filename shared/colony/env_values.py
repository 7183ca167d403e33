"""How one environment variable's text becomes a setting's value, for ``Settings.from_env``.

Each parser takes the variable's text (``None`` when it is unset or blank) and returns the
value, or raises ``ConfigError`` naming the variable and what it must be, so a bad value
fails at start-up, said where it is set.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from colony.errors import ConfigError

# The longest any org may keep each data class (days); an org may choose less, never more
# (``COLONY_RETENTION_MAX_DAYS``). ``transcripts`` must match terraform's bucket lifecycle
# rule (``var.transcript_retention_days``), which deletes what the daily job did not.
RETENTION_MAX_DAYS: dict[str, int] = {
    "transcripts": 365,
    "chat_events": 90,
    "llm_calls": 180,
    "outbox_bodies": 365,
    "research": 180,  # stored pages of prospects' companies (issue 33)
}


def bounded_int(name: str, text: str | None, default: int, low: int, high: int) -> int:
    """An integer in ``low..high``; ``default`` when unset."""
    if text is None:
        return default
    if not text.isdigit() or not low <= int(text) <= high:
        raise ConfigError(f"{name}={text!r} must be an integer in {low}..{high}")
    return int(text)


def function_urls(text: str | None) -> dict[str, str]:
    """``COLONY_FUNCTION_URLS``: a JSON object mapping function names to base URLs."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError as error:
        raise ConfigError(f"COLONY_FUNCTION_URLS is not JSON: {error}") from error
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and v.startswith(("http://", "https://"))
        for k, v in value.items()
    ):
        raise ConfigError('COLONY_FUNCTION_URLS must map names to URLs: {"campaign": "http://…"}')
    return value


def origins(name: str, text: str | None) -> tuple[str, ...]:
    """A comma-separated list of web origins (``https://app.example.com``), as a tuple."""
    found = []
    for item in (text or "").split(","):
        origin = item.strip().removesuffix("/")
        if not origin:
            continue
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.path:
            raise ConfigError(
                f"{name} must list origins like https://app.example.com (no path), got {item!r}"
            )
        if parts.query or parts.fragment or parts.username or parts.password:
            raise ConfigError(f"{name}: {item!r} is not an origin")
        found.append(origin)
    return tuple(found)


def frontend_api(text: str | None, deploy_env: str) -> str | None:
    """``COLONY_CLERK_FRONTEND_API``: one origin, ``https://`` in production."""
    if text is None:
        return None
    found = origins("COLONY_CLERK_FRONTEND_API", text)
    if len(found) != 1:
        raise ConfigError(
            "COLONY_CLERK_FRONTEND_API must be one origin, like https://clerk.example.com"
        )
    if deploy_env == "production" and not found[0].startswith("https://"):
        raise ConfigError("COLONY_CLERK_FRONTEND_API must be an https:// origin in production")
    return found[0]


def google_jwks_url(text: str | None, deploy_env: str, default: str) -> str:
    """``COLONY_GOOGLE_JWKS_URL``: an http(s) URL, ``https://`` in production; ``default``
    (Google's own) when unset."""
    if text is None:
        return default
    if deploy_env == "production" and not text.startswith("https://"):
        raise ConfigError("COLONY_GOOGLE_JWKS_URL must be an https:// URL in production")
    if not text.startswith(("http://", "https://")):
        raise ConfigError(f"COLONY_GOOGLE_JWKS_URL={text!r} must be an http(s) URL")
    return text


def retention_limits(text: str | None, defaults: Mapping[str, int]) -> dict[str, int]:
    """``COLONY_RETENTION_MAX_DAYS``: ``class=days`` pairs, comma-separated, over the
    ``defaults``; each class a known one, each period 1..3650 days."""
    limits = dict(defaults)
    for pair in (p.strip() for p in (text or "").split(",")):
        if not pair:
            continue
        name, _, days = pair.partition("=")
        name = name.strip()
        if name not in limits or not days.strip().isdigit() or not 1 <= int(days) <= 3650:
            raise ConfigError(
                f"COLONY_RETENTION_MAX_DAYS: {pair!r} must be <class>=<days> with a class in"
                f" {sorted(limits)} and 1..3650 days"
            )
        limits[name] = int(days)
    return limits


@dataclass(frozen=True, slots=True)
class ResearchWeb:
    """Where the local stand-in web listens (``address``: an IP and port) and the hostnames
    it serves, which, and which alone, are connected to there (docs/research.md)."""

    ip: str
    port: int
    hosts: frozenset[str]


_RESEARCH_WEB_SHAPE = '{"address": "127.0.0.1:41775", "hosts": ["acme.example", ...]}'


def research_web(text: str | None, deploy_env: str) -> ResearchWeb | None:
    """``COLONY_RESEARCH_WEB``: JSON ``{"address": "<ip>:<port>", "hosts": [...]}``, as
    ``colony.testing.web_server.WebServer.research_setting()`` writes it; local only."""
    if text is None:
        return None
    if deploy_env == "production":
        raise ConfigError(
            "COLONY_RESEARCH_WEB names a local stand-in web and is refused when"
            " COLONY_ENV=production; unset it"
        )
    try:
        value = json.loads(text)
        ip, _, port = value["address"].rpartition(":")
        address = ipaddress.ip_address(ip.strip("[]"))
        hosts = frozenset(h.strip().lower().rstrip(".") for h in value["hosts"])
        if not port.isdigit() or not 1 <= int(port) <= 65535 or not all(hosts):
            raise ValueError(port)
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise ConfigError(
            f"COLONY_RESEARCH_WEB must be JSON like {_RESEARCH_WEB_SHAPE}: {error}"
        ) from error
    return ResearchWeb(str(address), int(port), hosts)


def research_contact_url(text: str | None, deploy_env: str) -> str | None:
    """``COLONY_RESEARCH_CONTACT_URL``: the page our user agent names (``https://`` in
    production), where a site's owner learns who reads their pages and how to stop it."""
    if text is None:
        return None
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"COLONY_RESEARCH_CONTACT_URL={text!r} must be an http(s) URL")
    if deploy_env == "production" and parts.scheme != "https":
        raise ConfigError("COLONY_RESEARCH_CONTACT_URL must be an https:// URL in production")
    if any(c.isspace() or c in "()" for c in text):  # it is quoted in a User-Agent comment
        raise ConfigError(f"COLONY_RESEARCH_CONTACT_URL={text!r} may not hold spaces or ()")
    return text


def research_browser(text: str | None) -> str | None:
    """``COLONY_RESEARCH_BROWSER``: the path of an executable Chromium binary (Debian's is
    ``/usr/lib/chromium/chromium``), checked at start-up rather than at the first page."""
    if text is None or not text.strip():
        return None
    path = text.strip()
    if not os.path.isabs(path) or not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise ConfigError(
            f"COLONY_RESEARCH_BROWSER must name an executable Chromium binary by its absolute"
            f" path (Debian's: /usr/lib/chromium/chromium, `make browser` installs it): {path!r}"
        )
    return path


def dns_resolver(text: str | None, deploy_env: str) -> tuple[str, int] | None:
    """``COLONY_DNS_RESOLVER``: ``<ip>:<port>`` of the DNS server the sending-domain checks
    ask (``colony.testing.dns_server``); local only: production asks the system's resolver,
    and a resolver of our choosing there could vouch for a domain nobody published."""
    if text is None:
        return None
    if deploy_env == "production":
        raise ConfigError(
            "COLONY_DNS_RESOLVER names a local DNS stand-in and is refused when"
            " COLONY_ENV=production; unset it (the system's resolver is used)"
        )
    ip, _, port = text.rpartition(":")
    try:
        address = ipaddress.ip_address(ip.strip("[]"))
    except ValueError:
        address = None
    if address is None or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ConfigError(f"COLONY_DNS_RESOLVER={text!r} must be <ip>:<port>, e.g. 127.0.0.1:5353")
    return str(address), int(port)


_SPF_INCLUDE = re.compile(r"^(?=.{4,253}$)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$")


def spf_include(text: str | None) -> str | None:
    """``COLONY_SPF_INCLUDE``: the domain an org's SPF record must ``include:`` for our mail
    to pass SPF (the relay's or provider's SPF domain, e.g. ``_spf.google.com``)."""
    if text is None:
        return None
    value = text.strip().lower().rstrip(".")
    value = value.removeprefix("include:")
    if not _SPF_INCLUDE.match(value):
        raise ConfigError(
            f"COLONY_SPF_INCLUDE={text!r} must be a domain name, e.g. _spf.google.com"
        )
    return value
