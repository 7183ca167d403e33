"""DNS as the sending-domain checks read it (issue 39 item 3): the TXT records at a name.

``colony.adapters.dns`` asks the system's resolver (or, in tests and the local stack, the
stand-in ``COLONY_DNS_RESOLVER`` names) over the DNS wire protocol.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class DnsResolver(Protocol):
    """The TXT records published at one name, each record's character-strings joined (a
    long DKIM key travels as several strings of at most 255 bytes: RFC 6376 §3.6.2.2 joins
    them). A name that does not exist, or has no TXT record, is an empty list: an answer,
    not an error. ``UpstreamError`` when DNS cannot answer now (a timeout, SERVFAIL): a
    later check may."""

    def txt(self, name: str) -> list[str]: ...
