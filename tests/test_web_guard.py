"""The address rules of the safe fetch (``colony.adapters.web_guard``, and ``web_wire``'s
pin) against a real HTTP server on 127.0.0.1: every SSRF refusal, on the first hop and on
every redirect, the pin against DNS rebinding, and TLS verified for the name while the
connection goes to the checked address.

No request leaves this machine: ``only_loopback`` refuses any connection but to 127.0.0.1
(and records each attempt, so a test can say none was made)."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from ipaddress import ip_address
from pathlib import Path

import pytest

from colony.adapters.web import SafeFetcher
from colony.adapters.web_guard import AddressGuard, refusal
from colony.testing.certs import self_signed
from tests.little_web import (
    AGENT,
    HOSTS,
    Answers,
    LittleWeb,
    fenced,
    page,
    redirect,
    safe_fetcher,
)


@pytest.fixture
def web(monkeypatch: pytest.MonkeyPatch) -> Iterator[LittleWeb]:
    yield from fenced(monkeypatch)


# --- the guard ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/",
        "http://127.1.2.3/",
        "http://10.0.0.1/",
        "http://172.16.0.1/",
        "http://172.31.255.255/",
        "http://192.168.1.1/",
        "http://169.254.169.254/computeMetadata/v1/",
        "http://169.254.1.1/",
        "http://0.0.0.0/",
        "http://100.64.0.1/",  # carrier-grade NAT
        "http://224.0.0.1/",
        "http://255.255.255.255/",
        "http://[::1]/",
        "http://[::]/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:10.0.0.1]/",
        "http://[::ffff:169.254.169.254]/",
        "http://[fe80::1]/",
        "http://[fc00::1]/",
        "http://[ff02::1]/",
        "http://[64:ff9b::a00:1]/",  # NAT64 of 10.0.0.1
        "http://[2002:7f00:1::]/",  # 6to4 of 127.0.0.1
        "http://[fd00:ec2::254]/",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://metadata/",
        "http://localhost/",
        "http://api.localhost/",
        "http://2130706433/",  # 127.0.0.1 as one number: a single label, never resolved
        "https://10.0.0.1/",
    ],
)
def test_private_loopback_link_local_and_metadata_addresses_are_refused_unconnected(
    url: str, web: LittleWeb
) -> None:
    resolver = Answers(["93.184.216.34"])
    result = safe_fetcher(web.local(*HOSTS), resolver).get(url)
    assert result.outcome == "refused_address", result
    assert web.connections == [] and web.record.arrivals == []
    assert resolver.asked == []  # literals and forbidden names are never looked up


def test_the_stand_ins_own_address_is_refused_while_it_listens(web: LittleWeb) -> None:
    result = safe_fetcher(web.local(*HOSTS)).get(f"http://127.0.0.1:{web.port}/")
    assert result.outcome == "refused_address"
    assert web.connections == [] and web.record.arrivals == []


@pytest.mark.parametrize(
    ("url", "outcome"),
    [
        ("ftp://acme.example/", "refused_scheme_or_port"),
        ("file:///etc/passwd", "refused_scheme_or_port"),
        ("gopher://acme.example:70/", "refused_scheme_or_port"),
        ("http://acme.example:8080/", "refused_scheme_or_port"),
        ("http://public.example:22/", "refused_scheme_or_port"),
        ("http://user:secret@acme.example/", "bad_url"),
        ("http://exa mple.com/", "bad_url"),
    ],
)
def test_only_http_and_https_on_80_and_443(url: str, outcome: str, web: LittleWeb) -> None:
    result = safe_fetcher(web.local(*HOSTS), Answers(["93.184.216.34"])).get(url)
    assert result.outcome == outcome, result
    assert web.connections == []


@pytest.mark.parametrize(
    "answers",
    [["10.0.0.1"], ["93.184.216.34", "127.0.0.1"], ["::1"], ["::ffff:192.168.0.9"], []],
)
def test_a_name_resolving_to_any_private_address_is_refused_before_connecting(
    answers: list[str], web: LittleWeb
) -> None:
    resolver = Answers(answers)
    result = safe_fetcher(None, resolver).get("http://intranet.example/")
    assert result.outcome == ("unreachable" if not answers else "refused_address")
    assert resolver.asked == ["intranet.example"]
    assert web.connections == []


def test_the_connection_goes_to_the_checked_address_and_the_name_is_never_resolved_again(
    web: LittleWeb,
) -> None:
    # DNS rebinding: a public answer to the check, loopback to any later question
    resolver = Answers(["93.184.216.34"], ["127.0.0.1"])
    result = safe_fetcher(None, resolver).get("http://rebind.example/")
    assert resolver.asked == ["rebind.example"]  # one question, and its answer was used
    assert web.connections == [("93.184.216.34", 80)]  # refused by the test's fence, not sent
    assert result.outcome == "unreachable"


def test_refusal_reasons_name_what_the_address_is() -> None:
    assert refusal(ip_address("169.254.169.254")) == "the metadata server"
    assert refusal(ip_address("::ffff:127.0.0.1")) == "loopback (inside ::ffff:7f00:1)"
    assert refusal(ip_address("93.184.216.34")) is None
    assert refusal(ip_address("2606:4700::1111")) is None


# --- redirects ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "location",
    [
        "http://127.0.0.1:{port}/secret",
        "http://169.254.169.254/computeMetadata/v1/",
        "http://metadata.google.internal/",
        "http://[::ffff:127.0.0.1]:{port}/",
        "http://intranet.example/",
        "ftp://acme.example/",
    ],
)
def test_every_redirect_hop_is_checked_again(location: str, web: LittleWeb) -> None:
    web.routes["*", "/"] = redirect(location.format(port=web.port))
    resolver = Answers(["10.0.0.1"])
    result = safe_fetcher(web.local(*HOSTS), resolver).get("http://acme.example/")
    assert result.outcome in ("refused_address", "refused_scheme_or_port"), result
    assert web.record.paths() == ["/"]  # the hop was never requested
    assert web.connections == [("127.0.0.1", web.port)]
    assert result.redirects == (result.final_url,)


def test_redirects_are_followed_up_to_five_hops_each_pinned(web: LittleWeb) -> None:
    for n in range(5):
        web.routes["*", f"/{n}"] = redirect(f"http://www.acme.example/{n + 1}", 301)
    web.routes["*", "/5"] = page(b"<p>arrived</p>")
    web.routes["*", "/loop-a"] = redirect("/loop-b")
    web.routes["*", "/loop-b"] = redirect("http://acme.example/loop-a")
    web.routes["*", "/long"] = redirect("/0")
    web.routes["*", "/nowhere"] = page(b"", None, status=302)
    fetch = safe_fetcher(web.local(*HOSTS))
    done = fetch.get("http://acme.example/0")
    assert done.outcome == "ok" and done.text == "<p>arrived</p>"
    assert done.final_url == "http://www.acme.example/5" and len(done.redirects) == 5
    assert [a.host for a in web.record.arrivals][-1] == "www.acme.example"
    assert fetch.get("http://acme.example/loop-a").outcome == "redirect_loop"
    assert fetch.get("http://acme.example/long").outcome == "too_many_redirects"
    assert fetch.get("http://acme.example/nowhere").outcome == "http_error"


def test_a_hook_may_stop_a_redirect_before_it_is_requested(web: LittleWeb) -> None:
    web.routes["*", "/"] = redirect("http://other.example/")
    seen: list[str] = []

    def stop(url: str) -> tuple[str, str]:
        seen.append(url)
        return "redirected", "another site"

    result = safe_fetcher(web.local(*HOSTS)).get("http://acme.example/", before_hop=stop)  # type: ignore[arg-type]
    assert (result.outcome, result.final_url) == ("redirected", "http://other.example/")
    assert seen == ["http://other.example/"] and web.record.paths() == ["/"]


# --- TLS: pinned to an address, verified for the name -------------------------------------


def test_https_is_pinned_to_the_address_and_verified_for_the_hostname(
    tmp_path: Path, web: LittleWeb
) -> None:
    cert, key = self_signed(tmp_path, "secure", dns_names=("secure.example",))
    server = LittleWeb(tls=(cert, key))
    try:
        server.routes["*", "/"] = page(b"<p>secret handshake</p>")
        context = ssl.create_default_context(cafile=str(cert))
        guard = AddressGuard(local=server.local("secure.example", "wrong.example"))
        fetch = SafeFetcher(AGENT, guard=guard, ssl_context=context)
        good = fetch.get(f"https://secure.example:{server.port}/")
        assert good.outcome == "ok" and good.text == "<p>secret handshake</p>"
        arrival = server.record.arrivals[0]
        assert arrival.sni == "secure.example"
        assert arrival.headers["Host"] == f"secure.example:{server.port}"
        # the same address under a name the certificate does not carry: refused by TLS
        bad = fetch.get(f"https://wrong.example:{server.port}/")
        assert bad.outcome == "unreachable" and "certificate" in bad.detail.lower()
        assert len(server.record.arrivals) == 1
        assert web.connections == [("127.0.0.1", server.port)] * 2
    finally:
        server.close()
