"""From a record's cells to a prospect (ENT-002) or a deal (ENT-003), or to the reason it
cannot be one. Headers are matched by alias, as common CRMs and prospect databases export
them (HubSpot's "Record ID", "Email Address", Salesforce's "Opportunity Name", Apollo's
"Person Linkedin Url", …): case, spaces, underscores and punctuation do not matter.

A cell is kept as text exactly as written (trimmed): a cell such as ``=HYPERLINK(...)`` is a
name like any other here, never evaluated; every CSV we write escapes it
(``colony.imports.report``). Emails are checked by ``email-validator`` without DNS.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal

from colony.imports.reading import FileRejected

MAX_CELL = 500  # longest value any imported column keeps

# Who owns the record (issue 35): a person of the org, by user id or address; CRMs name the
# column after the record ("Contact owner", "Deal owner").
OWNER_ALIASES = (
    "owner",
    "owner id",
    "owner email",
    "contact owner",
    "deal owner",
    "account owner",
    "record owner",
    "assigned to",
    "sales rep",
)
PROSPECT_ALIASES: dict[str, tuple[str, ...]] = {
    "external_id": ("record id", "id", "external id", "contact id", "crm id", "lead id"),
    "email": (
        "email",
        "email address",
        "e mail",
        "e mail address",
        "work email",
        "business email",
        "primary email",
    ),
    "first_name": ("first name", "firstname", "given name"),
    "last_name": ("last name", "lastname", "surname", "family name"),
    "name": ("name", "full name", "contact name", "contact"),
    "company": ("company", "company name", "account name", "organization", "organisation"),
    "company_domain": (
        "company domain",
        "domain",
        "website",
        "company website",
        "website url",
        "company url",
    ),
    "title": ("title", "job title", "position", "role"),
    "linkedin_url": (
        "linkedin url",
        "linkedin",
        "linkedin profile",
        "linkedin profile url",
        "person linkedin url",
    ),
    "owner_id": OWNER_ALIASES,
}
DEAL_ALIASES: dict[str, tuple[str, ...]] = {
    "external_id": ("record id", "deal id", "opportunity id", "id", "external id"),
    "name": ("deal name", "opportunity name", "name", "deal"),
    "stage": ("deal stage", "stage", "pipeline stage", "opportunity stage"),
    "value": ("amount", "value", "deal value", "deal amount", "amount usd"),
    "close_date": ("close date", "expected close date", "closedate"),
    "next_action": ("next step", "next action", "next steps"),
    "contact_email": ("contact email", "associated contact email", "primary contact email"),
    "owner_id": OWNER_ALIASES,
}
ALIASES = {"prospects": PROSPECT_ALIASES, "deals": DEAL_ALIASES}
_BY_ALIAS = {
    kind: {alias: field for field, aliases in table.items() for alias in aliases}
    for kind, table in ALIASES.items()
}
_DOMAIN = re.compile(r"^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$")


@dataclass(frozen=True, slots=True)
class Rejection:
    field: str | None
    reason: str
    value: str | None = None  # the offending cell, cut to 200 characters


@dataclass(frozen=True, slots=True)
class Prospect:
    name: str
    company: str
    email: str | None
    company_domain: str | None
    title: str | None
    linkedin_url: str | None
    external_id: str | None
    owner_id: str | None = None  # as written (a user id or an address) until the job resolves it


@dataclass(frozen=True, slots=True)
class Deal:
    name: str
    stage: str
    value: Decimal | None
    close_date: date | None
    next_action: str | None
    contact_email: str | None
    external_id: str | None
    owner_id: str | None = None  # as written (a user id or an address) until the job resolves it


def _key(header: str) -> str:
    return " ".join(re.sub(r"[^0-9a-z]+", " ", header.casefold()).split())


def column_map(headers: list[str], kind: str) -> dict[str, str]:
    """Field → the header that carries it. Two headers meaning one field (``Email`` and
    ``E-mail``) are ``FileRejected``: which one to believe is the uploader's call."""
    by_alias = _BY_ALIAS[kind]
    found: dict[str, str] = {}
    for header in headers:
        field = by_alias.get(_key(header))
        if field is None:
            continue
        if field in found:
            raise FileRejected(
                f"columns {found[field][:60]!r} and {header[:60]!r} both mean {field}; keep one"
            )
        found[field] = header
    return found


class _Bad(Exception):
    def __init__(self, field: str, reason: str, value: str | None = None) -> None:
        self.rejection = Rejection(field, reason, None if value is None else value[:200])


def _get(cells: Mapping[str, str], columns: Mapping[str, str], field: str) -> str | None:
    header = columns.get(field)
    value = (cells.get(header) or "").strip() if header is not None else ""
    if len(value) > MAX_CELL:
        raise _Bad(field, f"longer than {MAX_CELL} characters")
    return value or None


# An ASCII dot-atom local part (RFC 5322 atext): what email-validator accepts unchanged, so
# only the domain needs its (slow, IDNA) check, which is cached: a file names far fewer
# companies than people. Anything else (Unicode, quoting, reserved mailbox names) goes
# through email-validator whole.
_ATEXT = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
_DOT_ATOM = re.compile(rf"^{_ATEXT}(?:\.{_ATEXT})*$")


@functools.lru_cache(maxsize=8192)
def _email_domain(domain: str) -> str | None:
    """The domain as email-validator normalises it, or None if it is not valid there."""
    from email_validator import EmailNotValidError, validate_email  # lazy: imports only

    try:
        return str(validate_email(f"a@{domain}", check_deliverability=False).domain)
    except EmailNotValidError:
        return None


def _email(value: str | None, field: str = "email") -> str | None:
    if value is None:
        return None
    from email_validator import EmailNotValidError, validate_email  # lazy: imports only
    from email_validator.rfc_constants import CASE_INSENSITIVE_MAILBOX_NAMES

    local, at, domain = value.rpartition("@")
    if (
        at
        and len(local) <= 64
        and len(value) <= 254
        and _DOT_ATOM.match(local)
        and local.lower() not in CASE_INSENSITIVE_MAILBOX_NAMES
    ):
        checked = _email_domain(domain)
        if checked is None:
            raise _Bad(field, "not a valid email address", value)
        return f"{local}@{checked}"
    try:
        return str(validate_email(value, check_deliverability=False).normalized)
    except EmailNotValidError:
        raise _Bad(field, "not a valid email address", value) from None


def _domain(value: str | None) -> str | None:
    if value is None:
        return None
    host = re.sub(r"^[a-z][a-z0-9+.-]*://", "", value.strip().casefold())
    host = re.split(r"[/?#:]", host, maxsplit=1)[0].removeprefix("www.")
    if not _DOMAIN.match(host):
        raise _Bad("company_domain", "not a domain or website", value)
    return host


def prospect(cells: Mapping[str, str], columns: Mapping[str, str]) -> Prospect | Rejection:
    """The prospect in ``cells``, or why not: a name (full, or first and last) and a
    company (or a domain to stand for it) are required, and something to match it on
    re-import by: an external id, an email, or a company domain."""
    try:
        name = _get(cells, columns, "name")
        if name is None:
            parts = [_get(cells, columns, "first_name"), _get(cells, columns, "last_name")]
            name = " ".join(p for p in parts if p) or None
        if name is None:
            raise _Bad("name", "a name (or a first and last name) is required")
        email = _email(_get(cells, columns, "email"))
        domain = _domain(_get(cells, columns, "company_domain"))
        company = _get(cells, columns, "company") or domain
        if company is None:
            raise _Bad("company", "a company (or its domain) is required")
        external_id = _get(cells, columns, "external_id")
        if not (external_id or email or domain):
            raise _Bad("email", "an email, an external id or a company domain is required")
        linkedin = _get(cells, columns, "linkedin_url")
        if linkedin is not None and "linkedin.com/" not in linkedin.casefold():
            raise _Bad("linkedin_url", "not a LinkedIn profile URL", linkedin)
        return Prospect(
            name=name,
            company=company,
            email=email,
            company_domain=domain,
            title=_get(cells, columns, "title"),
            linkedin_url=linkedin,
            external_id=external_id,
            owner_id=_get(cells, columns, "owner_id"),
        )
    except _Bad as bad:
        return bad.rejection


_DATE_FORMATS = ("%Y-%m-%d", "%Y/%m/%d", "%m/%d/%Y", "%d.%m.%Y")


def _date(value: str | None) -> date | None:
    if value is None:
        return None
    text = value.strip()[:10] if re.match(r"^\d{4}-\d{2}-\d{2}[ T]", value) else value.strip()
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(text, fmt).date()
        except ValueError:
            continue
    raise _Bad("close_date", "not a date (use YYYY-MM-DD)", value)


# 1234.56 or 1,234.56: a comma only as a thousands separator. "1.234,5" (a decimal comma)
# is refused rather than read as 1.23: an amount is never guessed.
_AMOUNT = re.compile(r"^-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?$")


def _money(value: str | None) -> Decimal | None:
    if value is None:
        return None
    text = re.sub(r"\s|[$€£]|USD|EUR|GBP", "", value)
    if not _AMOUNT.match(text):
        raise _Bad("value", "not an amount (write it as 1234.56)", value)
    amount = Decimal(text.replace(",", ""))
    if abs(amount) >= Decimal("1e12"):
        raise _Bad("value", "not an amount this system can hold", value)
    return amount.quantize(Decimal("0.01"))


def deal(cells: Mapping[str, str], columns: Mapping[str, str]) -> Deal | Rejection:
    """The deal in ``cells``, or why not: a name and a stage are required."""
    try:
        name = _get(cells, columns, "name")
        if name is None:
            raise _Bad("name", "a deal name is required")
        stage = _get(cells, columns, "stage")
        if stage is None:
            raise _Bad("stage", "a deal stage is required")
        return Deal(
            name=name,
            stage="_".join(re.sub(r"[^0-9a-z]+", " ", stage.casefold()).split()) or stage,
            value=_money(_get(cells, columns, "value")),
            close_date=_date(_get(cells, columns, "close_date")),
            next_action=_get(cells, columns, "next_action"),
            contact_email=_email(_get(cells, columns, "contact_email"), "contact_email"),
            external_id=_get(cells, columns, "external_id"),
            owner_id=_get(cells, columns, "owner_id"),
        )
    except _Bad as bad:
        return bad.rejection
