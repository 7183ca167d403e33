"""Where the research fetch may connect, and the one address it will (issue 33 item 3).

A URL a page hands us can name anything: our own metadata server, a database on the VPC, a
name whose DNS answers a public address to the check and 127.0.0.1 to the connection (DNS
rebinding). So every hop, the first and each redirect alike, is checked here before a byte
is sent:

1. the scheme is http or https and the port 80 or 443 (``refused_scheme_or_port``); a URL
   with credentials in it is not one we request (``bad_url``);
2. the name is not one of ``FORBIDDEN_NAMES`` (the metadata server's, ``localhost``), nor
   a single label (resolved through the machine's search domains: a local name);
3. the name is resolved once (``Resolver``; an IP literal is its own answer) and refused if
   *any* address it gives is not public (``refusal``): one private answer among public ones
   is how rebinding and split-horizon tricks start;
4. the hop is pinned to the first checked address (``Pinned``): the connection is made to
   that IP literal, so the HTTP stack never resolves the name again, while the name is kept
   for ``Host`` and for TLS (SNI and the certificate's hostname check, httpcore's
   ``sni_hostname`` request extension).

Locally, ``COLONY_RESEARCH_WEB`` (``env_values.ResearchWeb``, refused in production) names
the stand-in web: exactly its hostnames are pinned to its address (on any port, and on its
own), without resolving. Everything else, IP literals included, is checked as in
production, so a redirect to ``http://127.0.0.1:<its port>/`` is refused while it listens.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv6Address, ip_address, ip_network

import httpx

from colony.env_values import ResearchWeb
from colony.ports.web import FetchOutcome

# host, port → the addresses the name resolves to (IP literals as text); [] for none
Resolver = Callable[[str, int], Sequence[str]]

ALLOWED_PORTS = frozenset({80, 443})
DEFAULT_PORTS = {"http": 80, "https": 443}
# Names that are ours or the machine's whatever DNS says (GCP's metadata server answers to
# the first two inside a VPC; ``localhost`` and ``*.localhost`` are loopback by RFC 6761).
FORBIDDEN_NAMES = frozenset({"metadata.google.internal", "metadata", "localhost"})
FORBIDDEN_SUFFIXES = (".localhost", ".internal")
# The cloud metadata services (GCP and AWS share 169.254.169.254; AWS's IPv6 one): link-local
# already, named so a refusal says what it was.
METADATA_ADDRESSES = frozenset({ip_address("169.254.169.254"), ip_address("fd00:ec2::254")})
# NAT64's well-known prefix: the last 32 bits are an IPv4 address a NAT64 gateway connects to.
_NAT64 = ip_network("64:ff9b::/96")
_HOSTNAME = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*")  # IDNA-encoded already (xn--)


def system_resolver(host: str, port: int) -> list[str]:
    """Every address ``getaddrinfo`` gives for ``host`` (deduplicated, in its order)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return []
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def refusal(address: IPv4Address | IPv6Address) -> str | None:
    """Why we never connect to ``address``, or None for a public (global) one. An IPv6
    address carrying an IPv4 one (mapped, 6to4, NAT64) is judged by the IPv4 one too."""
    if address in METADATA_ADDRESSES:
        return "the metadata server"
    if isinstance(address, IPv6Address):
        inner = address.ipv4_mapped or address.sixtofour
        if inner is None and address in _NAT64:
            inner = IPv4Address(int(address) & 0xFFFFFFFF)
        if inner is not None and (why := refusal(inner)):
            return f"{why} (inside {address})"
    for flag in ("loopback", "private", "link_local", "multicast", "reserved", "unspecified"):
        if getattr(address, f"is_{flag}"):
            return flag.replace("_", "-")
    if not address.is_global:
        return "not global"
    return None


@dataclass(frozen=True, slots=True)
class Pinned:
    """One checked hop: connect to ``ip``:``port``; send ``host_header``; verify TLS for
    ``sni`` (None for an IP literal, which is its own certificate name)."""

    url: httpx.URL
    ip: str
    port: int
    host_header: str
    sni: str | None


@dataclass(frozen=True, slots=True)
class Refused:
    """A hop we do not make, and why (``detail`` names the address or rule, no page text)."""

    outcome: FetchOutcome
    detail: str


def _literal(host: str) -> IPv4Address | IPv6Address | None:
    try:
        return ip_address(host)
    except ValueError:
        return None


class AddressGuard:
    """Checks and pins each hop (module docstring). ``resolver`` is the system's unless a
    test hands in its own; ``local`` is ``Settings.research_web``."""

    def __init__(
        self, *, resolver: Resolver = system_resolver, local: ResearchWeb | None = None
    ) -> None:
        self._resolve = resolver
        self._local = local

    def check(self, url: httpx.URL) -> Pinned | Refused:
        """Where ``url`` may be fetched from, or why it may not be."""
        scheme = url.scheme
        if scheme not in DEFAULT_PORTS:
            return Refused("refused_scheme_or_port", f"scheme {scheme!r}")
        if url.userinfo:
            return Refused("bad_url", "credentials in the URL")
        host = url.raw_host.decode("ascii").lower().rstrip(".")
        if not host:
            return Refused("bad_url", "no host")
        port = url.port or DEFAULT_PORTS[scheme]
        name = f"[{host}]" if ":" in host else host
        header = name if url.port is None else f"{name}:{port}"
        local = self._local
        if local is not None and host in local.hosts:
            if port not in ALLOWED_PORTS and port != local.port:
                return Refused("refused_scheme_or_port", f"port {port}")
            return Pinned(url, local.ip, local.port, header, host)
        literal = _literal(host)
        if literal is None and not _HOSTNAME.fullmatch(host):
            return Refused("bad_url", f"host {host!r} is not a hostname")
        if host in FORBIDDEN_NAMES or host.endswith(FORBIDDEN_SUFFIXES):
            return Refused("refused_address", f"{host!r} is never fetched")
        if literal is None and "." not in host:  # a single label resolves through search domains
            return Refused("refused_address", f"{host!r} is a local name")
        answers = [host] if literal is not None else list(self._resolve(host, port))
        if not answers:
            return Refused("unreachable", f"{host!r} does not resolve")
        for answer in answers:
            address = _literal(answer.split("%", 1)[0])
            why = "not an address" if address is None else refusal(address)
            if why:
                return Refused("refused_address", f"{host!r} is {answer} ({why})")
        if port not in ALLOWED_PORTS:  # after the address: a refused address is named as such
            return Refused("refused_scheme_or_port", f"port {port}")
        return Pinned(url, answers[0].split("%", 1)[0], port, header, None if literal else host)
