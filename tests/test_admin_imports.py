"""Imports from outside, over real HTTP: the admin and data-lifecycle functions as
functions-framework processes, the GCS emulator taking the signed upload, the local Cloud
Tasks stand-in delivering the job. An org admin uploads a CRM export with bad rows and
downloads the error report (formula-safe); an oversized or malformed declaration is a 413 or
422; every attempt on another org's import is refused and changes nothing, and the object a
file is stored as is named by us, never by the file's name (issue 31)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from colony.local.functions import FunctionServers
from colony.local.tokens import mint_local_token
from tests.conftest import APP_ROLE, Gcs, PgDB, wait_for

ALPHA, BETA = "org_alpha_imp", "org_beta_imp"
EXPORT = (
    b"Record ID,First Name,Last Name,Email Address,Company Name,Website\r\n"
    b"1,Ana,Lima,ana@stmary.org,St Mary,stmary.org\r\n"
    b'2,Ben,Okafor,"=HYPERLINK(""http://evil.example"",""x"")",Mercy,mercy.org\r\n'
    b"3,Cleo,Ng,cleo@mercy.org,Mercy,mercy.org\r\n"
)


@dataclass
class Api:
    url: str
    chat: str  # the chat function, whose /imports feeds /overview's Imports section
    http: httpx.Client
    data_dir: Path
    db: PgDB

    def bearer(self, org: str, *, admin: bool = True) -> dict[str, str]:
        token = mint_local_token(self.data_dir, org, org_claim="v2" if admin else "v1")
        return {"Authorization": f"Bearer {token}"}

    def call(self, method: str, path: str, org: str, **kwargs: Any) -> httpx.Response:
        headers = {**self.bearer(org, admin=kwargs.pop("admin", True))}
        return self.http.request(method, f"{self.url}{path}", headers=headers, **kwargs)

    def state(self) -> list[dict[str, Any]]:
        return self.db.owner_rows(
            "SELECT org_id, status, rows_done FROM import_jobs ORDER BY org_id, id"
        ) + self.db.owner_rows("SELECT org_id, name FROM contacts ORDER BY org_id, name")


@pytest.fixture
def api(testdb: PgDB, gcs: Gcs, tmp_path: Path) -> Iterator[Api]:
    testdb.as_owner(
        lambda conn: (
            conn.cursor().execute(
                "INSERT INTO organizations (id, name) VALUES (%s, 'A'), (%s, 'B')", (ALPHA, BETA)
            ),
            conn.commit(),
        )
    )
    env = {
        "COLONY_DB_MODE": "dsn",
        "COLONY_DB_DSN": testdb.dsn(APP_ROLE),
        "COLONY_EMBEDDING_DIM": str(testdb.dim),
        "COLONY_TRANSPORT": "local",
        "COLONY_DATA_DIR": str(tmp_path),
        **gcs.env,
    }
    with (
        FunctionServers(
            env, ("admin", "data-lifecycle", "chat"), log_dir=tmp_path / "logs"
        ) as servers,
        httpx.Client(timeout=30) as http,
    ):
        yield Api(servers.urls["admin"], servers.urls["chat"], http, tmp_path, testdb)


def _declare(api: Api, org: str, size: int, **extra: Any) -> httpx.Response:
    body = {"kind": "prospects", "format": "csv", "filename": "export.csv", "size_bytes": size}
    return api.call("POST", f"/orgs/{org}/imports", org, json={**body, **extra})


def test_an_admin_imports_a_crm_export_and_downloads_its_error_report(api: Api) -> None:
    declared = _declare(api, ALPHA, len(EXPORT))
    assert declared.status_code == 201, declared.text
    job = declared.json()
    assert job["status"] == "awaiting_upload" and job["upload"]["method"] == "PUT"
    early = api.call("POST", f"/orgs/{ALPHA}/imports/{job['id']}/start", ALPHA)
    assert early.status_code == 409 and early.json()["error"]["code"] == "conflict"
    put = api.http.put(job["upload"]["url"], content=EXPORT, headers=job["upload"]["headers"])
    assert put.status_code == 200
    started = api.call("POST", f"/orgs/{ALPHA}/imports/{job['id']}/start", ALPHA)
    assert started.status_code == 202 and started.json()["status"] == "queued"

    def finished() -> dict[str, Any] | None:
        shown = api.call("GET", f"/orgs/{ALPHA}/imports/{job['id']}", ALPHA).json()
        return shown if shown["status"] in ("completed", "failed") else None

    done = wait_for(finished, what="the import job to finish")
    assert done["status"] == "completed", done
    assert (done["rows_created"], done["rows_rejected"]) == (2, 1)
    listed = api.call("GET", f"/orgs/{ALPHA}/imports", ALPHA).json()["imports"]
    assert [j["id"] for j in listed] == [job["id"]]
    report = api.call("GET", f"/orgs/{ALPHA}/imports/{job['id']}/errors.csv", ALPHA)
    assert report.status_code == 200 and report.headers["content-type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(report.text)))
    assert rows[1][:4] == ["2", "3", "email", "not a valid email address"]
    # the formula cell comes back as text a spreadsheet shows, never runs
    assert rows[1][4] == '\'=HYPERLINK("http://evil.example","x")'
    # /overview's Imports section: the org's jobs, counts only; another org sees none
    progress = api.http.get(f"{api.chat}/imports", headers=api.bearer(ALPHA, admin=False))
    (shown,) = progress.json()["imports"]
    assert (shown["id"], shown["rows_done"], shown["rows_rejected"]) == (job["id"], 3, 1)
    assert "object_name" not in shown
    other = api.http.get(f"{api.chat}/imports", headers=api.bearer(BETA)).json()
    assert other == {"imports": []}


def test_an_oversized_or_malformed_declaration_is_refused_before_any_upload(api: Api) -> None:
    huge = _declare(api, ALPHA, 2 * 1024**3)
    assert huge.status_code == 413 and huge.json()["error"]["code"] == "payload_too_large"
    unknown = _declare(api, ALPHA, 10, colour="red")
    assert unknown.status_code == 422 and "colour" in unknown.json()["error"]["message"]
    kind = api.call("POST", f"/orgs/{ALPHA}/imports", ALPHA, json={"kind": "x", "size_bytes": 1})
    assert kind.status_code == 422
    not_json = api.call("POST", f"/orgs/{ALPHA}/imports", ALPHA, content=EXPORT)
    assert not_json.status_code == 415
    assert api.state() == []


def test_another_orgs_import_is_refused_from_outside(api: Api) -> None:
    # the object is named by us (org from the token's path, a fresh job id), never by the
    # file's name: a name reaching into another org's prefix names nothing
    hostile = f"../../{BETA}/imports/upload.csv"
    job = _declare(api, ALPHA, len(EXPORT), filename=hostile).json()
    expected = f"imports/{ALPHA}/{job['id']}/upload.csv"
    assert urlsplit(job["upload"]["url"]).path.endswith(f"/{expected}")
    assert BETA not in job["upload"]["url"]
    assert api.db.owner_rows("SELECT object_name, filename FROM import_jobs") == [
        {"object_name": expected, "filename": hostile}
    ]
    api.http.put(job["upload"]["url"], content=EXPORT, headers=job["upload"]["headers"])
    before = api.state()
    base = f"/orgs/{ALPHA}/imports"
    for method, path in (
        ("GET", base),
        ("POST", base),
        ("GET", f"{base}/{job['id']}"),
        ("POST", f"{base}/{job['id']}/start"),
        ("GET", f"{base}/{job['id']}/errors.csv"),
    ):
        # an admin of another org, and a member (not admin) of this one: 403
        other = api.call(method, path, BETA, json={})
        assert other.status_code == 403, (method, path, other.text)
        member = api.call(method, path, ALPHA, json={}, admin=False)
        assert member.status_code == 403, (method, path, member.text)
    # another org's job under one's own org: as if it did not exist
    for method, suffix in (("GET", ""), ("POST", "/start"), ("GET", "/errors.csv")):
        answer = api.call(method, f"/orgs/{BETA}/imports/{job['id']}{suffix}", BETA)
        assert answer.status_code == 404 and answer.json()["error"]["code"] == "not_found"
    unsigned = api.http.get(f"{api.url}{base}")
    assert unsigned.status_code == 401
    assert api.state() == before
    assert [r for r in before if r.get("status")] == [
        {"org_id": ALPHA, "status": "awaiting_upload", "rows_done": 0}
    ]
