"""The ``DnsResolver`` port's adapter (dnspython) against the DNS stand-in
(``colony.testing.dns_server``), both speaking the real wire protocol on 127.0.0.1: what a
name's TXT records are, over UDP and, when the answer is too big for UDP, over TCP; a name
that does not exist or has no TXT record is an empty answer; a failing server is an
``UpstreamError``; a name DNS cannot carry is refused before anything is asked."""

from __future__ import annotations

from collections.abc import Iterator

import dns.flags
import dns.message
import dns.query
import dns.rcode
import pytest

from colony.adapters.dns import DnsPythonResolver, resolver_from_settings
from colony.errors import ConfigError, UpstreamError, ValidationFailed
from colony.settings import Settings
from colony.testing.dns_server import DnsServer, spf
from colony.testing.loopback import closed_port

KEY = "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA" + "q" * 350 + "IDAQAB"


@pytest.fixture
def server() -> Iterator[DnsServer]:
    with DnsServer() as running:
        running.txt("acme.example", spf("include:_spf.relay.test"), "site-verification=abc")
        running.txt("s1._domainkey.acme.example", f"v=DKIM1; k=rsa; p={KEY}")
        running.cname("s2._domainkey.acme.example", "s1._domainkey.acme.example")
        running.txt("_dmarc.acme.example", "v=DMARC1; p=none")
        yield running


def resolver(server: DnsServer) -> DnsPythonResolver:
    return DnsPythonResolver((server.host, server.port), timeout=2.0)


def test_txt_records_come_back_whole_each_one_a_value(server: DnsServer) -> None:
    ask = resolver(server)
    assert sorted(ask.txt("acme.example")) == [
        "site-verification=abc",
        "v=spf1 include:_spf.relay.test ~all",
    ]
    # a 400-character key travels as two strings of one record, joined back into one value
    assert ask.txt("s1._domainkey.acme.example") == [f"v=DKIM1; k=rsa; p={KEY}"]
    assert ask.txt("S1._DomainKey.Acme.Example.") == [f"v=DKIM1; k=rsa; p={KEY}"]
    # a selector delegated by CNAME answers with its target's record
    assert ask.txt("s2._domainkey.acme.example") == [f"v=DKIM1; k=rsa; p={KEY}"]
    assert [q[0] for q in server.queries] == ["udp"] * 4  # EDNS: all of it fits in UDP


def test_a_missing_name_or_record_is_an_empty_answer(server: DnsServer) -> None:
    ask = resolver(server)
    assert ask.txt("nothing.acme.example") == []  # NXDOMAIN
    assert ask.txt("_domainkey.acme.example") == []  # exists (names below it), no records
    assert ask.txt("elsewhere.example") == []


def test_an_answer_too_big_for_udp_is_asked_again_over_tcp() -> None:
    with DnsServer(udp_limit=512) as server:
        server.txt("big.acme.example", "v=DKIM1; k=rsa; p=" + "A" * 700)
        answer = resolver(server).txt("big.acme.example")
        assert answer == ["v=DKIM1; k=rsa; p=" + "A" * 700]
        assert [q[0] for q in server.queries] == ["udp", "tcp"]


def test_the_stand_in_answers_as_an_authoritative_server_on_the_wire(server: DnsServer) -> None:
    query = dns.message.make_query("nothing.acme.example", "TXT")
    answer = dns.query.udp(query, server.host, port=server.port, timeout=2)
    assert answer.rcode() == dns.rcode.NXDOMAIN and answer.flags & dns.flags.AA
    assert answer.id == query.id
    query = dns.message.make_query("acme.example", "TXT")
    answer = dns.query.tcp(query, server.host, port=server.port, timeout=2)
    assert answer.rcode() == dns.rcode.NOERROR and len(answer.answer[0]) == 2
    # a datagram that is not DNS gets no answer rather than breaking the server
    assert server.answer(b"\x00\x01junk", "udp") is None
    assert resolver(server).txt("_dmarc.acme.example") == ["v=DMARC1; p=none"]


def test_a_failing_or_absent_server_is_an_upstream_error(server: DnsServer) -> None:
    server.fail("s1._domainkey.acme.example")
    with pytest.raises(UpstreamError, match="SERVFAIL"):
        resolver(server).txt("s1._domainkey.acme.example")
    server.fail("s1._domainkey.acme.example", False)
    assert resolver(server).txt("s1._domainkey.acme.example")
    nobody = DnsPythonResolver(("127.0.0.1", closed_port()), timeout=0.5)
    with pytest.raises(UpstreamError):
        nobody.txt("acme.example")


def test_a_name_dns_cannot_carry_is_refused_before_asking(server: DnsServer) -> None:
    with pytest.raises(ValidationFailed, match="not a name DNS can carry"):
        resolver(server).txt("a" * 64 + ".acme.example")
    assert server.queries == []


def test_the_setting_names_the_stand_in_and_production_refuses_it(server: DnsServer) -> None:
    local = Settings.from_env({"COLONY_DNS_RESOLVER": server.address})
    assert local.dns_resolver == (server.host, server.port)
    assert resolver_from_settings(local).txt("_dmarc.acme.example") == ["v=DMARC1; p=none"]
    for bad in ("127.0.0.1", "localhost:53", "127.0.0.1:99999"):
        with pytest.raises(ConfigError, match="COLONY_DNS_RESOLVER"):
            Settings.from_env({"COLONY_DNS_RESOLVER": bad})
    production = {
        "COLONY_ENV": "production",
        "COLONY_DB_MODE": "dsn",
        "COLONY_DB_DSN": "postgresql://app@10.0.0.5/colony",
        "COLONY_INVOKER_SERVICE_ACCOUNT": "invoker@p.iam.gserviceaccount.com",
    }
    assert Settings.from_env(production).sending_domains == "required"
    assert Settings.from_env(production).dns_resolver is None
    with pytest.raises(ConfigError, match="refused when COLONY_ENV=production"):
        Settings.from_env({**production, "COLONY_DNS_RESOLVER": server.address})
