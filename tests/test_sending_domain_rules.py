"""What a sending domain must publish (``colony.policy.sending_domains``), pure: DNS answers in
as a dict, problems and the records that mend them out. SPF is evaluated as a receiver
would (left to right, through includes and ``redirect=``, within ten lookups); DKIM must be
our key, exactly; DMARC may be the organisational domain's."""

from __future__ import annotations

import pytest

from colony.errors import ValidationFailed
from colony.policy.sending_domains import (
    DMARC_RECORD,
    check,
    dkim_record,
    domain_name,
    tags,
)

INCLUDE = "_spf.relay.test"
KEY = "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAwq" + "k" * 300
DOMAIN = "acme.example"
GOOD = {
    DOMAIN: ["v=spf1 include:_spf.relay.test ~all", "site-verification=1"],
    f"colony1._domainkey.{DOMAIN}": [dkim_record(KEY)],
    f"_dmarc.{DOMAIN}": ["v=DMARC1; p=quarantine; rua=mailto:d@acme.example"],
}


def verdict(zone: dict[str, list[str]], domain: str = DOMAIN, key: str = KEY):  # type: ignore[no-untyped-def]
    asked: list[str] = []

    def txt(name: str) -> list[str]:
        asked.append(name)
        return list(zone.get(name, []))

    found = check(domain, "colony1", key, INCLUDE, txt)
    return found, asked


def codes(zone: dict[str, list[str]], **kwargs: str) -> list[str]:
    return [p.code for p in verdict(zone, **kwargs)[0].problems]


def test_a_domain_publishing_all_three_passes() -> None:
    found, _ = verdict(GOOD)
    assert found.ok and found.publish == ()


def test_a_domain_publishing_nothing_is_told_all_three_records() -> None:
    found, _ = verdict({})
    assert [p.code for p in found.problems] == ["spf_missing", "dkim_missing", "dmarc_missing"]
    published = [r.as_dict() for r in found.publish]
    assert [(r["name"], r["value"]) for r in published] == [
        (DOMAIN, f"v=spf1 include:{INCLUDE} ~all"),
        (f"colony1._domainkey.{DOMAIN}", f"v=DKIM1; k=rsa; p={KEY}"),
        (f"_dmarc.{DOMAIN}", DMARC_RECORD),
    ]
    # the zone line carries a long key as strings of at most 255 characters
    zone = published[1]["zone"]
    pieces = zone.split(" IN TXT ", 1)[1].split('" "')
    assert len(pieces) == 2 and all(len(p.strip('"')) <= 255 for p in pieces)
    assert "".join(p.strip('"') for p in pieces) == published[1]["value"]


@pytest.mark.parametrize(
    ("record", "outcome"),
    [
        ("v=spf1 include:_spf.relay.test -all", True),
        ("v=spf1 +include:_spf.relay.test ip4:192.0.2.0/24 ~all", True),
        ("v=spf1 include:_spf.acme.example -all", True),  # reached through its own include
        ("v=spf1 redirect=_spf.acme.example", True),
        ("v=spf1 ip4:192.0.2.1 -all", False),
        ("v=spf1 -all include:_spf.relay.test", False),  # never reached: all ends evaluation
        ("v=spf1 ~include:_spf.relay.test -all", False),  # a softfail include authorises none
        ("v=spf1 include:%{d}.relay.test -all", False),  # a macro cannot be known here
    ],
)
def test_spf_passes_only_when_evaluation_reaches_the_include(record: str, outcome: bool) -> None:
    zone = {**GOOD, DOMAIN: [record], "_spf.acme.example": ["v=spf1 include:_spf.relay.test"]}
    assert ("spf_no_include" not in codes(zone)) is outcome


def test_spf_that_does_not_include_us_is_told_its_own_record_with_our_include() -> None:
    found, _ = verdict({**GOOD, DOMAIN: ["v=spf1 mx ip4:192.0.2.1 -all"]})
    assert [p.code for p in found.problems] == ["spf_no_include"]
    assert found.publish[0].value == "v=spf1 mx ip4:192.0.2.1 include:_spf.relay.test -all"
    found, _ = verdict({**GOOD, DOMAIN: ["v=spf1 ip4:192.0.2.1"]})
    assert found.publish[0].value == "v=spf1 ip4:192.0.2.1 include:_spf.relay.test ~all"


def test_two_spf_records_or_too_many_lookups_fail() -> None:
    two = {**GOOD, DOMAIN: ["v=spf1 include:_spf.relay.test ~all", "v=spf1 mx ~all"]}
    assert codes(two) == ["spf_multiple"]
    chain = {f"n{i}.example": [f"v=spf1 include:n{i + 1}.example"] for i in range(12)}
    deep = {**GOOD, **chain, DOMAIN: ["v=spf1 include:n0.example ~all"]}
    assert codes(deep) == ["spf_too_many_lookups"]
    loop = {
        **GOOD,
        DOMAIN: ["v=spf1 include:a.example ~all"],
        "a.example": ["v=spf1 include:acme.example"],
    }
    assert codes(loop) == ["spf_no_include"]  # a loop ends, it does not spin


@pytest.mark.parametrize(
    ("records", "code"),
    [
        ([], "dkim_missing"),
        (["v=DKIM1; k=rsa; p=" + "Z" * 300], "dkim_mismatch"),
        (["v=DKIM1; k=rsa; p="], "dkim_mismatch"),  # a revoked key
        (["v=DKIM1; k=ed25519; p=" + KEY], "dkim_mismatch"),
        ([dkim_record(KEY), dkim_record(KEY)], "dkim_multiple"),
        (["site-verification=1"], "dkim_missing"),
    ],
)
def test_dkim_must_be_our_key_and_only_it(records: list[str], code: str) -> None:
    zone = {**GOOD, f"colony1._domainkey.{DOMAIN}": records}
    found, _ = verdict(zone)
    assert [p.code for p in found.problems] == [code]
    assert found.publish[0].value == dkim_record(KEY)


def test_a_key_published_with_spaces_and_without_optional_tags_is_ours() -> None:
    spaced = "p=" + " ".join(KEY[i : i + 60] for i in range(0, len(KEY), 60))
    assert codes({**GOOD, f"colony1._domainkey.{DOMAIN}": [spaced]}) == []
    assert tags(" v = DKIM1 ;k=rsa; p=ab cd ;") == {"v": "DKIM1", "k": "rsa", "p": "abcd"}


def test_dmarc_may_be_the_parent_domains_and_must_be_one_record() -> None:
    sub = "mail.acme.example"
    zone = {
        sub: ["v=spf1 include:_spf.relay.test ~all"],
        f"colony1._domainkey.{sub}": [dkim_record(KEY)],
        f"_dmarc.{DOMAIN}": ["v=DMARC1; p=none"],
    }
    found, asked = verdict(zone, domain=sub)
    assert found.ok and asked[-2:] == [f"_dmarc.{sub}", f"_dmarc.{DOMAIN}"]
    assert codes({**GOOD, f"_dmarc.{DOMAIN}": ["v=spf1 nope"]}) == ["dmarc_missing"]
    two = {**GOOD, f"_dmarc.{DOMAIN}": ["v=DMARC1; p=none", "v=DMARC1; p=reject"]}
    assert codes(two) == ["dmarc_multiple"]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not a domain",
        "ada@acme.example",
        "https://acme.example",
        "acme.example/path",
        "192.0.2.1",
        "localhost",
        "acme.c0m",
        "-acme.example",
        "*.acme.example",
        "a" * 64 + ".example",
        ("a" * 60 + ".") * 5 + "example",
    ],
)
def test_what_is_not_a_domain_name_is_refused(text: str) -> None:
    with pytest.raises(ValidationFailed, match="domain name"):
        domain_name(text)


def test_a_domain_name_is_written_one_way() -> None:
    assert domain_name(" Mail.ACME.example. ") == "mail.acme.example"
    assert domain_name("bücher.example") == "xn--bcher-kva.example"
