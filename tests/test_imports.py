"""Imports as durable jobs, against the real embedded PostgreSQL and the GCS emulator: the
signed upload, the job the import queue runs, dedupe and re-import, the error report, a
crash at a batch boundary and its resume, and every kind of bad file (one reason for the
whole file, nothing stored) or bad row (its number and reason, the others stored)."""

from __future__ import annotations

import csv
import io
import json
import urllib.request
from dataclasses import dataclass, replace
from typing import Any

import pytest

from colony.contracts.imports import ImportCreate
from colony.errors import Conflict, NotFound, PayloadTooLarge
from colony.flows.tenants import imports
from colony.ports import BlobStore
from colony.registry.functions import IMPORT_QUEUE
from colony.runtime.deps import Deps
from colony.runtime.faults import Faults, InjectedFault
from colony.testing.inline import InlineTransport, local_deps
from tests.conftest import Gcs, PgDB

ORG, OTHER = "org_imp", "org_other"
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclass
class Env:
    deps: Deps
    db: PgDB
    transport: InlineTransport
    blobs: BlobStore

    def upload(self, data: bytes, *, kind: str = "prospects", fmt: str = "csv") -> str:
        """Declare, PUT to the signed URL (over HTTP, to the emulator), start; the job id."""
        declared = ImportCreate(kind=kind, format=fmt, filename=f"f.{fmt}", size_bytes=len(data))  # type: ignore[arg-type]
        job = imports.create(self.deps, ORG, declared, "user_1")
        upload = job["upload"]
        request = urllib.request.Request(
            upload["url"], data=data, method="PUT", headers=upload["headers"]
        )
        with _OPENER.open(request, timeout=10) as answer:
            assert answer.status == 200
        imports.start(self.deps, ORG, job["id"])
        return str(job["id"])

    def run(self, job_id: str, deps: Deps | None = None) -> dict[str, Any]:
        """Deliver the job's task as the queue would (its body names org and job)."""
        (task,) = [t for t in self.transport.tasks.values() if t.task_id == f"import-{job_id}"]
        assert task.queue == IMPORT_QUEUE and task.target == "data-lifecycle"
        body = json.loads(task.body)["task"]
        assert body == {"kind": "import", "org_id": ORG, "job_id": job_id}
        return imports.run_job(deps or self.deps, ORG, job_id)

    def contacts(self) -> list[dict[str, Any]]:
        return self.db.owner_rows(
            "SELECT org_id, external_id, name, email, company, company_domain, title,"
            " linkedin_url FROM contacts ORDER BY name"
        )


@pytest.fixture
def env(testdb: PgDB, gcs: Gcs) -> Env:
    for org in (ORG, OTHER):
        testdb.as_owner(
            lambda conn, org=org: (
                conn.cursor().execute(
                    "INSERT INTO organizations (id, name) VALUES (%s, %s)", (org, org)
                ),
                conn.commit(),
            )
        )
    transport = InlineTransport()
    blobs: BlobStore = gcs.store  # type: ignore[assignment]
    deps = local_deps(testdb.settings, testdb.app(), transport, blobs=blobs)
    return Env(deps, testdb, transport, blobs)


def _csv(rows: list[list[str]], *, delimiter: str = ",") -> str:
    out = io.StringIO()
    csv.writer(out, delimiter=delimiter, lineterminator="\r\n").writerows(rows)
    return out.getvalue()


# A HubSpot contacts export, row by row: who each person is (its first four columns) and
# where they work (the last four).
HUBSPOT_PEOPLE = [
    ["Record ID", "First Name", "Last Name", "Email Address"],
    ["101", "Ana", "Lima", "ana@stmary.org"],
    ["102", "Ben", "Okafor", "not-an-email"],
    ["103", "Cleo", "Ng", ""],
    ["104", '=HYPERLINK("http://x")', "Evil", "evil@mercy.org"],
    ["105", "Dev", "Rao", "DEV@Mercy.org"],
]
HUBSPOT_WORK = [
    ["Company Name", "Website", "Job Title", "LinkedIn URL"],
    ["St Mary", "https://www.stmary.org/about", "CIO", "https://linkedin.com/in/ana"],
    ["Mercy", "mercy.org", "CFO", ""],
    ["Mercy", "mercy.org", "", ""],
    ["Mercy", "mercy.org", "", ""],
    ["Mercy\nHealth", "mercy.org", "COO", ""],
]
HUBSPOT = [who + work for who, work in zip(HUBSPOT_PEOPLE, HUBSPOT_WORK, strict=True)]


@pytest.mark.covers("ENT-002")
def test_a_crm_export_imports_rejects_bad_rows_and_reimports_as_updates(env: Env) -> None:
    data = ("\ufeff" + _csv(HUBSPOT)).encode("utf-8")  # with a BOM, as Excel writes it
    job = env.run(env.upload(data))
    assert job["status"] == "completed", job
    assert (job["rows_total"], job["rows_created"], job["rows_rejected"]) == (5, 4, 1)
    assert job["encoding"] == "utf-8-sig"
    by_name = {c["name"]: c for c in env.contacts()}
    assert by_name["Ana Lima"]["company_domain"] == "stmary.org"
    assert by_name["Ana Lima"]["linkedin_url"] == "https://linkedin.com/in/ana"
    assert by_name["Dev Rao"]["company"] == "Mercy\nHealth"  # a quoted newline survives
    assert '=HYPERLINK("http://x") Evil' in by_name  # stored as text, as written
    report = list(csv.reader(io.StringIO(imports.error_report(env.deps, ORG, job["id"]))))
    assert report == [
        ["row", "line", "field", "reason", "value"],
        ["2", "3", "email", "not a valid email address", "not-an-email"],
    ]
    # the uploaded file is gone once the job ends; the report stays
    assert env.blobs.names(f"imports/{ORG}/") == []
    # the same people again, Ben fixed and Ana with a new title: updates, no duplicates
    again = [row[:] for row in HUBSPOT]
    again[1][6], again[2][3] = "CTO", "ben@mercy.org"
    second = env.run(env.upload(_csv(again).encode()))
    assert (second["rows_created"], second["rows_updated"], second["rows_rejected"]) == (1, 4, 0)
    contacts = env.contacts()
    assert len(contacts) == 5 and {c["org_id"] for c in contacts} == {ORG}
    assert {c["name"]: c["title"] for c in contacts}["Ana Lima"] == "CTO"
    # a re-run of a finished job changes nothing
    assert env.run(second["id"])["rows_updated"] == 4 and len(env.contacts()) == 5


def test_dedupe_by_external_id_then_email_then_name_and_domain(env: Env) -> None:
    rows = [
        ["Id", "Full Name", "E-mail", "Company", "Company Domain"],
        ["x1", "Ana Lima", "ana@a.org", "A", "a.org"],
        ["x1", "Ana M. Lima", "", "A", "a.org"],  # same external id
        ["", "Ana Lima-Souza", "ANA@a.org", "A", ""],  # same email, any case
        ["", "ana m. lima", "", "A", "A.org"],  # same name and domain as row 2's update
        ["", "Bo Chen", "", "B", "b.org"],
    ]
    job = env.run(env.upload(_csv(rows, delimiter=";").encode("cp1252")))
    assert (job["rows_created"], job["rows_updated"], job["rows_rejected"]) == (2, 3, 0)
    assert sorted(c["name"] for c in env.contacts()) == ["Bo Chen", "ana m. lima"]


def test_json_lines_and_other_encodings(env: Env) -> None:
    lines = [
        json.dumps({"email": "zoe@a.org", "name": "Zoë Ärzte", "company": "Klinik"}),
        "not json",
        json.dumps(["a list"]),
        json.dumps({"email": "x@a.org", "Email Address": "y@a.org", "name": "X", "company": "Y"}),
        "",
        json.dumps({"email": "q@a.org", "first_name": "Q", "last_name": "R", "company": "S"}),
    ]
    job = env.run(env.upload("\n".join(lines).encode("utf-8"), fmt="jsonl"))
    assert (job["rows_created"], job["rows_rejected"]) == (2, 3), job
    reasons = imports.error_report(env.deps, ORG, job["id"])
    assert "not valid JSON" in reasons and "not a JSON object" in reasons
    assert "both mean email" in reasons
    latin = _csv([["Name", "Email", "Company"], ["Jürgen Müßig", "j@klinik.de", "Größe"]])
    second = env.run(env.upload(latin.encode("latin-1")))
    assert second["status"] == "completed" and second["rows_created"] == 1
    assert "Jürgen Müßig" in {c["name"] for c in env.contacts()}


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"Name,Email\n" + b'"never ends,' + b"x" * 200_000, "quoted field never ends"),
        (b'Name,Email,Company\nA,"a@b.org",C\nB,"unterminated,D\n', "quoted field never ends"),
        (b"Email,E-mail,Name\na@b.org,a@b.org,A\n", "both mean email"),
        (b"Email,Name,Email\na@b.org,A,a@b.org\n", "names column 'Email' twice"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary"),
        (b"Foo,Bar\n1,2\n", "no column this import understands"),
        (b"\n\n", "empty"),
    ],
)
def test_a_file_that_cannot_be_read_fails_whole_with_one_reason(
    env: Env, data: bytes, reason: str
) -> None:
    job = env.run(env.upload(data))
    assert job["status"] == "failed" and reason in job["failure"], job
    assert (job["rows_created"], job["rows_updated"]) == (0, 0)
    assert env.contacts() == []


def test_too_large_is_refused_before_reading(env: Env) -> None:
    huge = ImportCreate(kind="prospects", filename="all.csv", size_bytes=2 * 1024**3)
    with pytest.raises(PayloadTooLarge, match="at most"):
        imports.create(env.deps, ORG, huge, "user_1")
    assert env.db.owner_rows("SELECT id FROM import_jobs") == []
    # a file bigger than it declared is refused by its stored size, and deleted unread
    small = ImportCreate(kind="prospects", filename="a.csv", size_bytes=10)
    job = imports.create(env.deps, ORG, small, "user_1")
    name = f"imports/{ORG}/{job['id']}/upload.csv"
    with pytest.raises(Conflict, match="not been uploaded"):
        imports.start(env.deps, ORG, job["id"])
    limited = replace(env.deps, blob_store=_Sized(env.blobs, imports.MAX_IMPORT_BYTES + 1))
    env.blobs.put(name, b"Name\nA\n", "text/csv")
    with pytest.raises(PayloadTooLarge):
        imports.start(limited, ORG, job["id"])  # type: ignore[arg-type]
    assert env.blobs.names(f"imports/{ORG}/") == [] and env.transport.tasks == {}
    assert imports.status(env.deps, ORG, job["id"])["status"] == "failed"


class _Sized:
    """The real store, reporting one size: a 50 MB upload is not needed to prove the check."""

    def __init__(self, store: BlobStore, size: int) -> None:
        self._store, self._size = store, size

    def size(self, name: str) -> int:
        return self._size

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def test_a_crash_mid_file_resumes_to_the_same_counts(env: Env, monkeypatch: Any) -> None:
    monkeypatch.setattr(imports, "BATCH", 10)
    rows = [["Email", "Name", "Company"]]
    rows += [[f"p{i}@a.org" if i % 7 else "bad", f"P {i}", "A"] for i in range(95)]
    rows += [["p1@a.org", "P 1 again", "A"]]
    job_id = env.upload(_csv(rows).encode())
    crashing = replace(env.deps, faults=Faults(frozenset({"import.mid_file"})))
    with pytest.raises(InjectedFault):
        env.run(job_id, crashing)
    midway = imports.status(env.deps, ORG, job_id)
    assert midway["status"] == "running" and 0 < midway["rows_done"] < 96
    done = env.run(job_id, crashing)  # the retry: the fault fires once
    assert done["status"] == "completed"
    assert (done["rows_created"], done["rows_updated"], done["rows_rejected"]) == (81, 1, 14)
    assert len(env.contacts()) == 81
    assert len(env.db.owner_rows("SELECT 1 FROM import_errors")) == 14


def test_another_orgs_job_is_not_found(env: Env) -> None:
    job_id = env.upload(b"Name,Email,Company\nA,a@b.org,C\n")
    for call in (imports.status, imports.start, imports.error_report, imports.run_job):
        with pytest.raises(NotFound):
            call(env.deps, OTHER, job_id)
    assert env.contacts() == []


@pytest.mark.covers("ENT-003")
def test_deals_from_a_crm_export(env: Env) -> None:
    env.run(env.upload(b"Email,Name,Company\nana@a.org,Ana,A\n"))
    deals = _csv(
        [
            ["Record ID", "Deal Name", "Deal Stage", "Amount", "Close Date", "Contact Email"],
            ["d1", "St Mary rollout", "Closed Won", "$12,500.00", "2026-11-30", "ANA@a.org"],
            ["d2", "Mercy pilot", "Appointment Scheduled", "abc", "2026-12-01", ""],
            ["d3", "No stage", "", "", "", ""],
            ["d1", "St Mary rollout", "Contract Sent", "", "12/24/2026", ""],
        ]
    )
    job = env.run(env.upload(deals.encode(), kind="deals"))
    assert (job["rows_created"], job["rows_updated"], job["rows_rejected"]) == (1, 1, 2), job
    (deal,) = env.db.owner_rows(
        "SELECT d.external_id, d.stage, d.value::text AS value, d.close_date::text AS close,"
        " c.email FROM deals d LEFT JOIN contacts c ON c.id = d.contact_id"
    )
    assert deal == {
        "external_id": "d1",
        "stage": "contract_sent",
        "value": "12500.00",
        "close": "2026-12-24",
        "email": "ana@a.org",
    }


def test_a_file_replaced_mid_job_fails_instead_of_resuming_on_other_bytes(
    env: Env, monkeypatch: Any
) -> None:
    monkeypatch.setattr(imports, "BATCH", 2)
    job_id = env.upload(
        _csv(
            [["Name", "Email", "Company"]] + [[f"P{i}", f"p{i}@a.org", "A"] for i in range(6)]
        ).encode()
    )
    crashing = replace(env.deps, faults=Faults(frozenset({"import.mid_file"})))
    with pytest.raises(InjectedFault):
        env.run(job_id, crashing)
    # the same length, other people: only the digest of the first attempt can tell
    swapped = _csv(
        [["Name", "Email", "Company"]] + [[f"Q{i}", f"q{i}@a.org", "A"] for i in range(6)]
    )
    env.blobs.put(f"imports/{ORG}/{job_id}/upload.csv", swapped.encode(), "text/csv")
    failed = env.run(job_id, crashing)
    assert failed["status"] == "failed" and "changed after the import started" in failed["failure"]
    assert all(c["name"].startswith("P") for c in env.contacts())


@pytest.mark.covers("ENT-002", "ENT-003")
def test_an_owner_column_sets_owners_an_unknown_owner_is_a_row_error_the_rest_by_rules(
    env: Env,
) -> None:
    """Issue 35: ``Contact owner`` names a person of the org by user id or address (any
    case); one who is not an active person of the org (left, unknown, another org's) rejects
    that record, never silently; the records without an owner are assigned by the rules."""
    from colony.store.tenants import members

    with env.deps.db.transaction(ORG) as cur:
        members.join(cur, ORG, "user_ana", "org:admin", "ana@imp.example", "Ana")
        members.join(cur, ORG, "user_ben", "org:member", "ben@imp.example", "Ben")
        members.join(cur, ORG, "user_gone", "org:member", "gone@imp.example", "Gone")
        members.leave(cur, "user_gone")
    with env.deps.db.transaction(OTHER) as cur:
        members.join(cur, OTHER, "user_zed", "org:admin", "zed@other.example", "Zed")
    people = _csv(
        [
            ["Email", "Name", "Company", "Contact owner"],
            ["p1@a.org", "P One", "A", "user_ben"],
            ["p2@a.org", "P Two", "A", "BEN@imp.example"],
            ["p3@a.org", "P Three", "A", "user_gone"],
            ["p4@a.org", "P Four", "A", "user_zed"],
            ["p5@a.org", "P Five", "A", ""],
            ["p6@a.org", "P Six", "A", "nobody@imp.example"],
        ]
    )
    job = env.run(env.upload(people.encode()))
    assert (job["rows_created"], job["rows_rejected"]) == (3, 3), job
    owners = {
        r["email"]: r["owner_id"] for r in env.db.owner_rows("SELECT email, owner_id FROM contacts")
    }
    # P Five had no owner: the rules (round robin) gave it to the first active person
    assert owners == {"p1@a.org": "user_ben", "p2@a.org": "user_ben", "p5@a.org": "user_ana"}
    report = list(csv.reader(io.StringIO(imports.error_report(env.deps, ORG, job["id"]))))
    assert [(r[0], r[2], r[4]) for r in report[1:]] == [
        ("3", "owner", "user_gone"),
        ("4", "owner", "user_zed"),
        ("6", "owner", "nobody@imp.example"),
    ]
    assert "not an active person of this organisation" in report[1][3]
    deals = _csv(
        [
            ["Deal Name", "Deal Stage", "Contact Email", "Deal owner"],
            ["Renewal", "Proposal", "p1@a.org", "user_ana"],
            ["Pilot", "Lead", "p1@a.org", ""],
        ]
    )
    second = env.run(env.upload(deals.encode(), kind="deals"))
    assert (second["rows_created"], second["rows_rejected"]) == (2, 0), second
    deal_owners = {
        r["name"]: r["owner_id"] for r in env.db.owner_rows("SELECT name, owner_id FROM deals")
    }
    # the owner column wins; a deal without one takes its prospect's owner
    assert deal_owners == {"Renewal": "user_ana", "Pilot": "user_ben"}
