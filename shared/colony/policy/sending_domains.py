"""What an org's sending domain must publish in DNS, and whether what it publishes is enough
(issue 39 item 3). Pure: the TXT records at a name come in through a lookup function, the
problems and the records to publish go out.

Three records, each for a reason a receiver checks:

- **SPF** (RFC 7208) at the domain: one ``v=spf1`` record whose evaluation reaches
  ``include:<the relay's SPF domain>`` (``COLONY_SPF_INCLUDE``) before an ``all`` term,
  directly or through the domain's own includes and ``redirect=``, within SPF's ten DNS
  lookups. Mail relayed for the domain then passes SPF.
- **DKIM** (RFC 6376) at ``<selector>._domainkey.<domain>``: our public key for this org and
  domain, exactly. The selector is ours and made per key (``colony`` and random hex), so two
  orgs never ask for the same name, and only someone who controls the domain's DNS can
  publish the key we made for this org: that is the proof the domain is the org's.
- **DMARC** (RFC 7489) at ``_dmarc.<domain>``, or at a parent (the organisational domain's
  record governs its subdomains; without the public suffix list, parents are asked down to
  two labels). Any policy passes; ``p=none`` is where an org starts.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from colony.errors import ValidationFailed

SELECTOR_PREFIX = "colony"
SPF_LOOKUPS = 10  # RFC 7208 §4.6.4: more is a permanent error, and the mail fails SPF
DMARC_RECORD = "v=DMARC1; p=none"
CHUNK = 255  # a TXT character-string's limit (a zone file writes a longer value in pieces)
_LABEL = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
_TLD = re.compile(r"^([a-z]{2,63}|xn--[a-z0-9-]{1,59})$")
# the mechanisms that cost a DNS lookup when evaluated (RFC 7208 §4.6.4)
_SPF_LOOKUP_TERMS = ("include:", "a:", "a/", "mx:", "mx/", "ptr:", "exists:")

Lookup = Callable[[str], list[str]]
RecordKind = Literal["spf", "dkim", "dmarc"]


@dataclass(frozen=True, slots=True)
class Problem:
    record: RecordKind
    code: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"record": self.record, "code": self.code, "message": self.message}


@dataclass(frozen=True, slots=True)
class Record:
    """One TXT record to publish: its name, its value, and the zone-file line that says it
    (the value split into strings of at most 255 characters, as DNS carries it)."""

    record: RecordKind
    name: str
    value: str

    def as_dict(self) -> dict[str, str]:
        pieces = [self.value[i : i + CHUNK] for i in range(0, len(self.value), CHUNK)]
        quoted = " ".join(f'"{piece}"' for piece in pieces)
        return {
            "record": self.record,
            "type": "TXT",
            "name": self.name,
            "value": self.value,
            "zone": f"{self.name}. 3600 IN TXT {quoted}",
        }


@dataclass(frozen=True, slots=True)
class Verdict:
    problems: tuple[Problem, ...]
    publish: tuple[Record, ...]  # what would mend each problem, as it should read

    @property
    def ok(self) -> bool:
        return not self.problems


def domain_name(text: str) -> str:
    """``text`` as a domain name we can check: lower case, no trailing dot, an international
    name in its ASCII form (``xn--``); ``ValidationFailed`` if it is not a domain (an
    address, a URL, an IP address, a single label, a label DNS cannot carry)."""
    value = text.strip().lower().rstrip(".")
    if not value or len(value) > 253 or any(c in value for c in "@/:\\ \t\r\n*"):
        raise ValidationFailed(f"{text!r} is not a domain name (example: mail.example.com)")
    try:
        ascii_name = value.encode("idna").decode("ascii")
    except UnicodeError:
        raise ValidationFailed(f"{text!r} is not a domain name DNS can carry") from None
    labels = ascii_name.split(".")
    if (
        len(labels) < 2
        or len(ascii_name) > 253
        or not all(_LABEL.match(label) for label in labels)
        or not _TLD.match(labels[-1])
    ):
        raise ValidationFailed(f"{text!r} is not a domain name (example: mail.example.com)")
    return ascii_name


def dkim_name(selector: str, domain: str) -> str:
    return f"{selector}._domainkey.{domain}"


def dkim_record(public_key: str) -> str:
    return f"v=DKIM1; k=rsa; p={public_key}"


def check(domain: str, selector: str, public_key: str, include: str, txt: Lookup) -> Verdict:
    """What is wrong with ``domain``'s SPF, DKIM and DMARC records, and what to publish."""
    found: list[tuple[Problem | None, Record]] = [
        _spf(domain, include, txt),
        _dkim(domain, selector, public_key, txt),
        _dmarc(domain, txt),
    ]
    problems = tuple(p for p, _ in found if p is not None)
    return Verdict(problems, tuple(r for p, r in found if p is not None))


# ─── SPF ─────────────────────────────────────────────────────────────────────────────────


def _spf_records(records: list[str]) -> list[str]:
    return [r.strip() for r in records if re.match(r"(?i)^v=spf1(\s|$)", r.strip())]


def _spf(domain: str, include: str, txt: Lookup) -> tuple[Problem | None, Record]:
    records = _spf_records(txt(domain))
    wanted = Record("spf", domain, f"v=spf1 include:{include} ~all")
    if not records:
        return Problem("spf", "spf_missing", f"{domain} publishes no SPF record"), wanted
    if len(records) > 1:
        message = f"{domain} publishes {len(records)} SPF records; receivers then ignore all"
        return Problem("spf", "spf_multiple", message), Record(
            "spf", domain, _with_include(records[0], include)
        )
    lookups = [0]
    try:
        reached = _reaches(records[0], include, txt, lookups, {domain})
    except _TooManyLookups:
        message = f"{domain}'s SPF record needs more than {SPF_LOOKUPS} DNS lookups"
        return Problem("spf", "spf_too_many_lookups", message), wanted
    if reached:
        return None, Record("spf", domain, records[0])
    message = f"{domain}'s SPF record does not include {include}, so our relay fails SPF"
    return Problem("spf", "spf_no_include", message), Record(
        "spf", domain, _with_include(records[0], include)
    )


class _TooManyLookups(Exception):
    pass


def _reaches(record: str, include: str, txt: Lookup, lookups: list[int], seen: set[str]) -> bool:
    """Whether evaluating ``record`` left to right reaches a passing ``include:<include>``
    before an ``all`` term (macros cannot be evaluated without a message: never a match)."""
    redirect = None
    for term in record.split()[1:]:
        qualifier, body = (term[0], term[1:]) if term[0] in "+-~?" else ("+", term)
        lowered = body.lower()
        if lowered == "all":
            return False
        if lowered.startswith("redirect="):
            redirect = lowered.split("=", 1)[1].rstrip(".")
            continue
        if lowered.startswith(_SPF_LOOKUP_TERMS) or lowered in ("a", "mx", "ptr"):
            _count(lookups)
        if not lowered.startswith("include:") or qualifier != "+" or "%" in lowered:
            continue
        target = lowered.split(":", 1)[1].rstrip(".")
        if target == include:
            return True
        if target not in seen:
            seen.add(target)
            nested = _spf_records(txt(target))
            if len(nested) == 1 and _reaches(nested[0], include, txt, lookups, seen):
                return True
    if redirect and redirect not in seen and "%" not in redirect:
        _count(lookups)
        if redirect == include:
            return True
        seen.add(redirect)
        nested = _spf_records(txt(redirect))
        return len(nested) == 1 and _reaches(nested[0], include, txt, lookups, seen)
    return False


def _count(lookups: list[int]) -> None:
    lookups[0] += 1
    if lookups[0] > SPF_LOOKUPS:
        raise _TooManyLookups


def _with_include(record: str, include: str) -> str:
    """``record`` with ``include:<include>`` before its ``all`` term (or its ``redirect=``);
    appended, with ``~all``, when it has neither."""
    terms = record.split()
    for index, term in enumerate(terms[1:], start=1):
        lowered = term.lower().lstrip("+-~?")
        if lowered == "all" or lowered.startswith("redirect="):
            return " ".join([*terms[:index], f"include:{include}", *terms[index:]])
    return " ".join([*terms, f"include:{include}", "~all"])


# ─── DKIM ────────────────────────────────────────────────────────────────────────────────


def tags(record: str) -> dict[str, str]:
    """A DKIM or DMARC record's ``tag=value`` list (RFC 6376 §3.2), names lower-cased,
    white space inside values removed (a key is often published with spaces in it)."""
    found: dict[str, str] = {}
    for part in record.split(";"):
        name, sep, value = part.partition("=")
        if sep and name.strip():
            found.setdefault(name.strip().lower(), re.sub(r"\s+", "", value))
    return found


def _dkim(
    domain: str, selector: str, public_key: str, txt: Lookup
) -> tuple[Problem | None, Record]:
    name = dkim_name(selector, domain)
    wanted = Record("dkim", name, dkim_record(public_key))
    keys = [tags(r) for r in txt(name)]
    keys = [k for k in keys if "p" in k]
    if not keys:
        message = f"no DKIM key is published at {name}"
        return Problem("dkim", "dkim_missing", message), wanted
    if len(keys) > 1:
        message = f"{len(keys)} DKIM records are published at {name}; publish only ours"
        return Problem("dkim", "dkim_multiple", message), wanted
    key = keys[0]
    if (
        key["p"] != public_key
        or key.get("k", "rsa").lower() != "rsa"
        or key.get("v", "DKIM1") != "DKIM1"
    ):
        message = f"the DKIM key published at {name} is not the one we sign with"
        return Problem("dkim", "dkim_mismatch", message), wanted
    return None, wanted


# ─── DMARC ───────────────────────────────────────────────────────────────────────────────


def _dmarc(domain: str, txt: Lookup) -> tuple[Problem | None, Record]:
    wanted = Record("dmarc", f"_dmarc.{domain}", DMARC_RECORD)
    labels = domain.split(".")
    for start in range(0, len(labels) - 1):
        name = "_dmarc." + ".".join(labels[start:])
        records = [r for r in txt(name) if re.match(r"^v\s*=\s*DMARC1\s*(;|$)", r.strip())]
        if len(records) > 1:
            message = f"{name} has {len(records)} DMARC records; receivers then apply none"
            return Problem("dmarc", "dmarc_multiple", message), Record("dmarc", name, records[0])
        if records:
            return None, Record("dmarc", name, records[0])
    message = f"no DMARC record is published at _dmarc.{domain} (nor for a parent domain)"
    return Problem("dmarc", "dmarc_missing", message), wanted
