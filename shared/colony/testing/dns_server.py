"""A DNS server on 127.0.0.1 that speaks the real wire protocol, UDP and TCP on one port: the
stand-in the sending-domain checks and the SMTP server's DKIM verification ask
(``COLONY_DNS_RESOLVER``).

It is authoritative for whatever a test publishes (``txt``, ``cname``) and answers as a
real server would: NXDOMAIN for a name it does not hold (NOERROR with no answer for one that
only has names below it, or records of another type), a CNAME followed within its zone,
SERVFAIL for a name told to ``fail``. Queries and answers are dnspython's message classes
on the wire: a UDP answer larger than the client's EDNS payload (512 bytes without EDNS) goes
back truncated (TC), and the client asks again over TCP, as RFC 7766 has it. Every question
is kept (``queries``: transport, name, type), so a test can see which way it travelled.
"""

from __future__ import annotations

import socket
import socketserver
import threading
from collections.abc import Iterable
from typing import Literal, Self

import dns.exception
import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rdtypes.ANY.CNAME
import dns.rdtypes.ANY.TXT
import dns.rrset

from colony.testing.loopback import HOST
from colony.testing.serving import ServingThread

TTL = 60
CHUNK = 255  # a TXT character-string's limit: longer values travel as several strings
PLAIN_UDP = 512  # what a UDP answer may be to a client that sent no EDNS (RFC 1035)
CNAME_HOPS = 8
Transport = Literal["udp", "tcp"]


class DnsServer:
    """``DnsServer()`` as a context manager; ``host``, ``port`` (once started),
    ``address`` (``"host:port"``, the value of ``COLONY_DNS_RESOLVER``), ``queries``.
    ``udp_limit`` caps a UDP answer below what the client offers (to force TCP)."""

    host = HOST

    def __init__(self, *, udp_limit: int = 4096) -> None:
        self._lock = threading.Lock()
        self._zone: dict[dns.name.Name, dict[int, list[dns.rdata.Rdata]]] = {}
        self._failing: set[dns.name.Name] = set()
        self._queries: list[tuple[Transport, str, str]] = []
        self._udp_limit = udp_limit
        self._threads: list[ServingThread] = []
        self.port = 0

    # ─── what is published ─────────────────────────────────────────────────────────────

    def txt(self, name: str, *values: str) -> None:
        """Publish ``values`` as the TXT records at ``name`` (replacing its TXT records; none
        given: it has none). A value over 255 bytes is split into strings, as zone files do."""
        rdatas: list[dns.rdata.Rdata] = []
        for value in values:
            raw = value.encode()
            strings = [raw[i : i + CHUNK] for i in range(0, len(raw), CHUNK)] or [b""]
            rdatas.append(dns.rdtypes.ANY.TXT.TXT(dns.rdataclass.IN, dns.rdatatype.TXT, strings))
        self._set(name, dns.rdatatype.TXT, rdatas)

    def cname(self, name: str, target: str) -> None:
        """Make ``name`` an alias of ``target`` (a DKIM selector delegated to a provider)."""
        rdata = dns.rdtypes.ANY.CNAME.CNAME(
            dns.rdataclass.IN, dns.rdatatype.CNAME, dns.name.from_text(target)
        )
        with self._lock:
            self._zone[_key(name)] = {dns.rdatatype.CNAME: [rdata]}

    def remove(self, name: str) -> None:
        """``name`` no longer exists (NXDOMAIN)."""
        with self._lock:
            self._zone.pop(_key(name), None)

    def fail(self, name: str, failing: bool = True) -> None:
        """Answer SERVFAIL for ``name`` (a broken authoritative server), or stop doing so."""
        with self._lock:
            (self._failing.add if failing else self._failing.discard)(_key(name))

    def _set(self, name: str, rdtype: int, rdatas: list[dns.rdata.Rdata]) -> None:
        with self._lock:
            node = self._zone.setdefault(_key(name), {})
            node.pop(dns.rdatatype.CNAME, None)
            if rdatas:
                node[rdtype] = rdatas
            else:
                node.pop(rdtype, None)

    @property
    def queries(self) -> list[tuple[Transport, str, str]]:
        with self._lock:
            return list(self._queries)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    # ─── answering ─────────────────────────────────────────────────────────────────────

    def answer(self, wire: bytes, transport: Transport) -> bytes | None:
        """The answer to one query's bytes (None: not a DNS message; it is dropped)."""
        try:
            query = dns.message.from_wire(wire)
        except dns.exception.DNSException:
            return None
        response = dns.message.make_response(query)
        response.flags |= dns.flags.AA
        if len(query.question) != 1:
            response.set_rcode(dns.rcode.FORMERR)
            return response.to_wire()
        question = query.question[0]
        with self._lock:
            kind = dns.rdatatype.to_text(question.rdtype)
            self._queries.append((transport, question.name.to_text(omit_final_dot=True), kind))
            self._resolve(response, question.name, question.rdtype)
        if transport == "tcp":
            return response.to_wire()
        offered = query.payload if query.edns >= 0 else PLAIN_UDP
        try:
            return response.to_wire(max_size=min(max(offered, PLAIN_UDP), self._udp_limit))
        except dns.exception.TooBig:  # too big for UDP: the client asks again over TCP
            truncated = dns.message.make_response(query)
            truncated.flags |= dns.flags.AA | dns.flags.TC
            return truncated.to_wire()

    def _resolve(self, response: dns.message.Message, name: dns.name.Name, rdtype: int) -> None:
        current = name.canonicalize()
        for _ in range(CNAME_HOPS):
            if current in self._failing:
                response.answer.clear()
                response.set_rcode(dns.rcode.SERVFAIL)
                return
            node = self._zone.get(current)
            if node is None:
                if not any(n.is_subdomain(current) for n in self._zone):
                    response.set_rcode(dns.rcode.NXDOMAIN)
                return
            alias = node.get(dns.rdatatype.CNAME)
            if alias and rdtype != dns.rdatatype.CNAME:
                response.answer.append(dns.rrset.from_rdata_list(current, TTL, alias))
                current = alias[0].target.canonicalize()  # type: ignore[attr-defined]
                continue
            if rdtype in node:
                response.answer.append(dns.rrset.from_rdata_list(current, TTL, node[rdtype]))
            return
        response.set_rcode(dns.rcode.SERVFAIL)  # an alias loop

    # ─── serving ───────────────────────────────────────────────────────────────────────

    def start(self) -> Self:
        udp, tcp = _bound_pair(self.host)
        self.port = udp.server_address[1]
        udp.dns = tcp.dns = self
        self._threads = [ServingThread(udp, "dns-udp"), ServingThread(tcp, "dns-tcp")]
        return self

    def stop(self) -> None:
        for thread in self._threads:
            thread.close()
        self._threads = []

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _key(name: str) -> dns.name.Name:
    return dns.name.from_text(name).canonicalize()


class _Udp(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        data, sock = self.request
        reply = self.server.dns.answer(data, "udp")  # type: ignore[attr-defined]
        if reply is not None:
            sock.sendto(reply, self.client_address)


class _Tcp(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        # RFC 7766: each message is prefixed with its two-byte length; a client may send
        # several on one connection.
        while (head := _read(self.request, 2)) is not None:
            data = _read(self.request, int.from_bytes(head, "big"))
            if data is None:
                return
            reply = self.server.dns.answer(data, "tcp")  # type: ignore[attr-defined]
            if reply is None:
                return
            self.request.sendall(len(reply).to_bytes(2, "big") + reply)


def _read(sock: socket.socket, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = sock.recv(left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


class _UdpServer(socketserver.ThreadingUDPServer):
    daemon_threads = True
    dns: DnsServer  # what answers, set once bound


class _TcpServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    block_on_close = False
    dns: DnsServer


def _bound_pair(host: str, attempts: int = 5) -> tuple[_UdpServer, _TcpServer]:
    """A UDP and a TCP server on one port: the UDP one binds port 0, the TCP one the port it
    got (taken over TCP by someone else meanwhile: both are let go and tried again)."""
    for _ in range(attempts):
        udp = _UdpServer((host, 0), _Udp)
        try:
            tcp = _TcpServer((host, udp.server_address[1]), _Tcp)
        except OSError:
            udp.server_close()
            continue
        return udp, tcp
    raise OSError(f"no port on {host} was free over both UDP and TCP in {attempts} attempts")


def spf(*mechanisms: str) -> str:
    """An SPF record of ``mechanisms`` (``include:…``, ``ip4:…``) ending ``~all``."""
    return " ".join(("v=spf1", *mechanisms, "~all"))


def publish(server: DnsServer, records: Iterable[dict[str, str]]) -> None:
    """Publish what a sending domain's check asked for (its ``publish`` list) as written."""
    for record in records:
        if record["type"] != "TXT":
            raise ValueError(f"only TXT records are published here, not {record['type']!r}")
        server.txt(record["name"], record["value"])
