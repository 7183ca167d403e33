"""The importer's pure parts (``colony.imports``): encodings and dialects, header aliases,
row validation, the formula-safe report, and the dedupe plan. No I/O."""

from __future__ import annotations

import codecs
import csv
import io

import pytest
from email_validator import EmailNotValidError, validate_email

from colony.imports import merge, reading, rows
from colony.imports.report import error_report, safe_cell


def _records(data: bytes, fmt: str = "csv") -> list[reading.Record]:
    return list(reading.records(data, fmt, reading.detect_encoding(data)))


@pytest.mark.parametrize(
    ("data", "encoding"),
    [
        (b"Name,Email\nAna,a@b.org\n", "utf-8"),
        (codecs.BOM_UTF8 + "Name\nZoë\n".encode(), "utf-8-sig"),
        ("Name\nZoë\n".encode("utf-16"), "utf-16"),
        ("Name;Company\nJürgen Müßig;Größe Klinik\n".encode("cp1252"), None),
    ],
)
def test_the_encoding_is_found(data: bytes, encoding: str | None) -> None:
    found = reading.detect_encoding(data)
    if encoding is not None:
        assert found == encoding
    assert data.decode(found).lstrip("\ufeff").startswith("Name")


def test_delimiters_are_sniffed_from_the_header() -> None:
    assert reading.sniff_delimiter('"Last, First";Email;Company\n') == ";"
    assert reading.sniff_delimiter("Name\tEmail\n") == "\t"
    assert reading.sniff_delimiter("Name\n") == ","


def test_records_keep_quoted_newlines_and_skip_blank_lines() -> None:
    data = b'Name,Notes\r\nAna,"line one\nline two"\r\n\r\n,\r\nBo,x\r\n'
    got = _records(data)
    assert [(r.number, r.line, dict(r.cells)) for r in got] == [
        (1, 2, {"Name": "Ana", "Notes": "line one\nline two"}),
        (2, 6, {"Name": "Bo", "Notes": "x"}),
    ]


def test_a_record_with_more_cells_than_the_header_is_a_problem_row() -> None:
    (record,) = _records(b"Name,Email\nAna,a@b.org,extra\n")
    assert record.problem == "it has 3 cells but the header has 2 columns"


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b'Name\n"' + b"x" * 20_000 + b'"\n', "longer than 10,000 characters"),
        (b'Name\n"open\nmore\n', "quoted field never ends"),
        (b'Name\n"closed"junk\n', "malformed"),
        (b"Name,name\n", "twice"),
        (b",,\n", "names no columns"),
    ],
)
def test_unreadable_csv_is_rejected_whole(data: bytes, reason: str) -> None:
    with pytest.raises(reading.FileRejected, match=reason):
        _records(data)


def test_column_aliases_of_common_exports() -> None:
    hubspot = ["Record ID", "First Name", "Last Name", "Email", "Company Name", "Website"]
    assert rows.column_map(hubspot, "prospects") == {
        "external_id": "Record ID",
        "first_name": "First Name",
        "last_name": "Last Name",
        "email": "Email",
        "company": "Company Name",
        "company_domain": "Website",
    }
    apollo = ["Full Name", "E-mail", "Job Title", "Person Linkedin Url", "Notes"]
    assert set(rows.column_map(apollo, "prospects")) == {"name", "email", "title", "linkedin_url"}
    salesforce = ["Opportunity ID", "Opportunity Name", "Stage", "Amount", "Close Date"]
    assert set(rows.column_map(salesforce, "deals")) == {
        "external_id",
        "name",
        "stage",
        "value",
        "close_date",
    }
    with pytest.raises(reading.FileRejected, match="both mean email"):
        rows.column_map(["Email", "Email Address"], "prospects")


NAMED = {"Name": "A", "Company": "C"}  # a prospect's name and company, nothing more


def _prospect(**cells: str) -> rows.Prospect | rows.Rejection:
    columns = rows.column_map(list(cells), "prospects")
    return rows.prospect(cells, columns)


def test_a_prospect_is_normalised_and_kept_as_text() -> None:
    formula = " =cmd|' /C calc'!A0 "  # padded, as a spreadsheet cell may hold it
    cells = {"Full Name": formula, "Email": "Ana@StMary.ORG", "Website": "HTTPS://www.StMary.org/x"}
    got = _prospect(**cells)
    assert isinstance(got, rows.Prospect)
    assert got.name == "=cmd|' /C calc'!A0"  # a formula is only text here
    assert (got.email, got.company_domain, got.company) == (
        "Ana@stmary.org",
        "stmary.org",
        "stmary.org",
    )


@pytest.mark.parametrize(
    ("cells", "field", "reason"),
    [
        ({"Email": "a@b.org", "Company": "C"}, "name", "name"),
        ({"Name": "A", "Email": "a@b.org"}, "company", "company"),
        (NAMED, "email", "an email, an external id"),
        ({**NAMED, "Email": "a@@b.org"}, "email", "not a valid email"),
        ({**NAMED, "Website": "not a site"}, "company_domain", "domain"),
        ({**NAMED, "Id": "1", "LinkedIn": "http://x.com"}, "linkedin_url", "LinkedIn"),
        ({**NAMED, "Name": "A" * 501, "Id": "1"}, "name", "longer than 500"),
    ],
)
def test_a_bad_prospect_names_its_field(cells: dict[str, str], field: str, reason: str) -> None:
    got = _prospect(**cells)
    assert isinstance(got, rows.Rejection) and got.field == field and reason in got.reason


@pytest.mark.parametrize(
    "address",
    [
        "ana@stmary.org",
        "Ana.Lima+crm@St-Mary.org",
        "a..b@x.org",
        ".a@x.org",
        "a@x",
        "a@-x.org",
        "a@x_y.org",
        "postmaster@Example.ORG",
        "zoë@ärzte.de",
        '"quoted"@x.org',
        "a@b@c.org",
        "x" * 65 + "@x.org",
        "a@" + "x" * 250 + ".org",
    ],
)
def test_emails_agree_with_email_validator(address: str) -> None:
    try:
        expected = str(validate_email(address, check_deliverability=False).normalized)
    except EmailNotValidError:
        expected = None
    got = _prospect(Name="A", Company="C", Id="1", Email=address)
    assert (got.email if isinstance(got, rows.Prospect) else None) == expected


def test_deals_parse_amounts_dates_and_stages() -> None:
    cells = {"Deal Name": "Rollout", "Deal Stage": "Closed Won", "Amount": "€1.234,5"}
    got = rows.deal(cells, rows.column_map(list(cells), "deals"))
    assert isinstance(got, rows.Rejection) and got.field == "value"
    cells = {
        "Deal Name": "Rollout",
        "Stage": "Closed Won",
        "Amount": "$1,234.5",
        "Close Date": "2026-03-01T10:00:00Z",
    }
    got = rows.deal(cells, rows.column_map(list(cells), "deals"))
    assert isinstance(got, rows.Deal)
    assert (got.stage, str(got.value), str(got.close_date)) == (
        "closed_won",
        "1234.50",
        "2026-03-01",
    )


@pytest.mark.parametrize("cell", ["=1+1", "+1", "-1", "@SUM(A1)", "\t=x", "\r=x"])
def test_a_formula_cell_is_escaped_in_the_report(cell: str) -> None:
    assert safe_cell(cell) == "'" + cell
    text = error_report([{"row": 1, "line": 2, "field": "name", "reason": "r", "value": cell}])
    assert list(csv.reader(io.StringIO(text)))[1][4] == "'" + cell
    assert safe_cell("plain") == "plain" and safe_cell(None) == ""


def _p(name: str, email: str | None = None, domain: str | None = None, ext: str | None = None):
    return rows.Prospect(name, "C", email, domain, None, None, ext)


def test_the_plan_merges_by_external_id_then_email_then_name_and_domain() -> None:
    existing = [
        {"id": "c1", "external_id": "x1", "email": "a@b.org", "name": "ana", "domain": None}
    ]
    plan = merge.plan_prospects(
        [
            _p("Ana", ext="x1"),
            _p("Ana L", email="A@B.org"),
            _p("Bo", email="bo@b.org", domain="b.org"),
            _p("bo", domain="B.org"),
            _p("Cy", email="cy@b.org"),
        ],
        existing,
    )
    assert (plan.created, plan.updated) == (2, 3)
    assert list(plan.updates) == ["c1"] and plan.updates["c1"]["name"] == "Ana L"
    assert sorted(r["name"] for r in plan.inserts.values()) == ["Cy", "bo"]
    bo = next(r for r in plan.inserts.values() if r["name"] == "bo")
    assert bo["email"] == "bo@b.org"  # an empty cell keeps the earlier record's value
