"""The ``DnsResolver`` port over ``dnspython``: TXT records, asked over the DNS wire protocol.

Production asks the system's resolver (``/etc/resolv.conf``: a Cloud Run instance's is
Google's); tests and the local stack name a stand-in with ``COLONY_DNS_RESOLVER``
(``colony.testing.dns_server``). Queries go out with EDNS0 and a 1,232-byte UDP payload (the
DNS flag day's size, which no path fragments), so a 2,048-bit DKIM key fits in one UDP answer;
a larger answer comes back truncated and is asked again over TCP (dnspython does that). No
cache: a re-check must see what was published since the last one.

What an answer becomes:

    NXDOMAIN, or the name without TXT records (NOERROR, no answer)  ─► []  (an answer)
    a timeout, SERVFAIL from every server, no reachable server       ─► UpstreamError (retry)
    a name DNS cannot carry (a label over 63 bytes, the whole over 255) ─► ValidationFailed
    no resolver configured on this machine                          ─► ConfigError
"""

from __future__ import annotations

import dns.exception
import dns.name
import dns.resolver

from colony.errors import ConfigError, UpstreamError, ValidationFailed
from colony.settings import Settings

EDNS_PAYLOAD = 1232


def resolver_from_settings(settings: Settings, *, timeout: float = 5.0) -> DnsPythonResolver:
    """The system's resolver, or the server ``COLONY_DNS_RESOLVER`` names."""
    return DnsPythonResolver(settings.dns_resolver, timeout=timeout)


class DnsPythonResolver:
    def __init__(self, nameserver: tuple[str, int] | None = None, *, timeout: float = 5.0) -> None:
        try:
            resolver = dns.resolver.Resolver(configure=nameserver is None)
        except dns.resolver.NoResolverConfiguration:
            raise ConfigError(
                "this machine has no DNS resolver configured (/etc/resolv.conf);"
                " set COLONY_DNS_RESOLVER locally"
            ) from None
        if nameserver is not None:
            resolver.nameservers = [nameserver[0]]
            resolver.port = nameserver[1]
        resolver.use_edns(0, 0, EDNS_PAYLOAD)
        resolver.lifetime = timeout  # the whole question, retries and TCP included
        resolver.cache = None
        self._resolver = resolver

    def txt(self, name: str) -> list[str]:
        try:
            qname = dns.name.from_text(name)
        except dns.exception.DNSException as error:
            raise ValidationFailed(f"{name!r} is not a name DNS can carry ({error})") from None
        try:
            answer = self._resolver.resolve(qname, "TXT", search=False, raise_on_no_answer=False)
        except dns.resolver.NXDOMAIN:
            return []
        except dns.resolver.NoNameservers:  # every server answered SERVFAIL or REFUSED
            raise UpstreamError(f"DNS could not answer for {name!r} (SERVFAIL)") from None
        except dns.exception.Timeout:
            raise UpstreamError(f"DNS did not answer for {name!r} in time") from None
        except dns.exception.DNSException as error:
            raise UpstreamError(f"DNS failed for {name!r}: {type(error).__name__}") from None
        if answer.rrset is None:
            return []
        # A record's strings are one value (RFC 7208 §3.3, RFC 6376 §3.6.2.2); bytes that are
        # not UTF-8 cannot be a record we asked for, and stay visible as replacement marks.
        return [b"".join(r.strings).decode("utf-8", "replace") for r in answer.rrset]
