"""Import benchmark: 100,000 prospect rows through the real path, one JSON line.

A CRM-style CSV (HubSpot's headers) of ``--rows`` records, 2% of them with an invalid email
and 5% repeating an earlier person (same email, another title), is declared through
``flows.tenants.imports.create``, PUT over HTTP to the signed upload URL on ``gcp-storage-emulator``
and queued (``flows.tenants.imports.start``). The task body the queue would deliver is then POSTed
to a real data-lifecycle function (a functions-framework process, as Cloud Tasks calls it),
which reads the file from the emulator and writes it to the embedded PostgreSQL. Each
worker is warmed first by a 100-row file on a third org (its cold start is not the
import's throughput).

Measured: rows/s over the job (the worker's POST), the worker process's peak RSS (VmHWM),
rows stored, rejected (must equal the planted invalid ones) and merged (the planted
duplicates). Then the same file, on a second org, through a worker that crashes once
mid-file (``COLONY_INJECT_FAULTS=import.mid_file``: a 503, as Cloud Tasks sees it) and
the retry: its counts must be the clean run's. Targets (issue 17): >= 5,000 rows/s, peak
RSS <= 300 MB, counts exact.

    python bench/import.py [--rows 100000]
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import httpx

from colony.adapters.storage import blob_store_from_settings
from colony.contracts.imports import ImportCreate
from colony.flows.tenants import imports
from colony.local import embedded
from colony.local.functions import FunctionServers
from colony.settings import Settings
from colony.store import Database, connect_factory, fetch_value
from colony.testing.emulators import storage_emulator
from colony.testing.inline import InlineTransport, local_deps

ORGS = ("org_bench_import", "org_bench_import_crash", "org_bench_warm_up")
BUCKET = "colony-bench-imports"
TARGETS = {"rows_per_s": 5000, "peak_rss_mb": 300}
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def prospects_csv(rows: int) -> tuple[bytes, int, int]:
    """The file, the planted invalid rows and the planted duplicates."""
    invalid, duplicates = rows * 2 // 100, rows * 5 // 100
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(
        ["Record ID", "First Name", "Last Name", "Email", "Company Name", "Website", "Job Title"]
    )
    unique = 0
    for n in range(rows):
        if n % 50 == 7 and invalid:  # 2%: one in fifty
            writer.writerow(["", f"Bad{n}", "Row", f"bad-{n}-at-example", "Acme", "acme.org", ""])
            invalid -= 1
        elif n % 20 == 11 and duplicates and unique:  # 5%: someone from earlier, retitled
            k = (n * 7919) % unique
            writer.writerow(["", f"P{k}", "Person", f"p{k}@h{k % 997}.org", f"H{k % 997}",
                             f"h{k % 997}.org", "VP Facilities"])  # fmt: skip
            duplicates -= 1
        else:
            k = unique
            writer.writerow(["", f"P{k}", "Person", f"p{k}@h{k % 997}.org", f"H{k % 997}",
                             f"https://www.h{k % 997}.org", "Director"])  # fmt: skip
            unique += 1
    assert invalid == 0 and duplicates == 0, "the planted rows must all fit"
    return out.getvalue().encode(), rows * 2 // 100, rows * 5 // 100


def upload(deps: Any, org: str, data: bytes) -> str:
    declared = ImportCreate(kind="prospects", filename="hubspot.csv", size_bytes=len(data))
    job = imports.create(deps, org, declared, "bench")
    put = urllib.request.Request(
        job["upload"]["url"], data=data, method="PUT", headers=job["upload"]["headers"]
    )
    with _OPENER.open(put, timeout=120) as answer:
        assert answer.status == 200
    imports.start(deps, org, job["id"])
    return str(job["id"])


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants (functions-framework serves from gunicorn workers)."""
    found = [pid]
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            found += _tree(int(child))
    return found


def peak_rss_mb(pid: int) -> float:
    """The largest peak resident set (VmHWM) of the server's processes, in MB."""
    peaks = []
    for member in _tree(pid):
        for line in Path(f"/proc/{member}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                peaks.append(int(line.split()[1]) / 1024)
    return round(max(peaks), 1)


def deliver(http: httpx.Client, url: str, transport: InlineTransport, job: str) -> httpx.Response:
    (task,) = [t for t in transport.tasks.values() if t.task_id == f"import-{job}"]
    return http.post(url, content=task.body, headers={"content-type": "application/json"})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args()
    os.environ.setdefault("XDG_RUNTIME_DIR", f"/tmp/colony-runtime-{os.getuid()}")
    data, planted_invalid, planted_duplicates = prospects_csv(args.rows)
    log(f"file: {len(data):,} bytes, {args.rows:,} rows")
    with (
        embedded.scratch_database(Settings.from_env(), "bench_import") as base,
        storage_emulator(bucket=None) as gcs_url,
        tempfile.TemporaryDirectory() as scratch,
    ):
        os.environ["STORAGE_EMULATOR_HOST"] = gcs_url
        env = {
            "COLONY_DB_MODE": "dsn",
            "COLONY_DB_DSN": base.db_dsn or "",
            "COLONY_EMBEDDING_DIM": str(base.embedding_dim),
            "COLONY_DATA_DIR": scratch,
            "COLONY_ASSETS_BUCKET": BUCKET,
            "COLONY_SIGNING_KEY_FILE": str(Path(scratch) / "key.json"),
            "STORAGE_EMULATOR_HOST": gcs_url,
        }
        settings = Settings.from_env(env)
        blobs = blob_store_from_settings(settings)
        blobs.ensure_bucket()
        db = Database(connect_factory(base, "app"))
        for org in ORGS:
            with db.transaction(org) as cur:
                cur.execute("INSERT INTO organizations (id, name) VALUES (%s, 'bench')", (org,))
        transport = InlineTransport()
        deps = local_deps(settings, db, transport, blobs=blobs)
        crash_env = {**env, "COLONY_INJECT_FAULTS": "import.mid_file"}
        with (
            FunctionServers(env, ["data-lifecycle"]) as clean,
            FunctionServers(crash_env, ["data-lifecycle"]) as crashing,
            httpx.Client(timeout=600) as http,
        ):
            # each worker's first request loads the flows and the validators (a cold start,
            # measured by bench/cold_start.py): a 100-row file warms it before the clock runs
            for server in (clean, crashing):
                warm = upload(deps, ORGS[2], prospects_csv(100)[0])
                assert deliver(http, server.urls["data-lifecycle"], transport, warm).is_success
            job = upload(deps, ORGS[0], data)
            started = time.perf_counter()
            answer = deliver(http, clean.urls["data-lifecycle"], transport, job)
            seconds = time.perf_counter() - started
            assert answer.status_code == 200, answer.text
            first = answer.json()
            rss = peak_rss_mb(clean.pid("data-lifecycle"))
            log(f"clean run: {seconds:.1f}s, peak RSS {rss} MB")

            crash_job = upload(deps, ORGS[1], data)
            url = crashing.urls["data-lifecycle"]
            crashed = deliver(http, url, transport, crash_job)
            midway = imports.status(deps, ORGS[1], crash_job)
            retried = deliver(http, url, transport, crash_job)
            assert retried.status_code == 200, retried.text
            second = retried.json()
        with db.transaction(ORGS[0]) as cur:
            stored = int(fetch_value(cur, "SELECT count(*) FROM contacts"))
        with db.transaction(ORGS[1]) as cur:
            stored_after_crash = int(fetch_value(cur, "SELECT count(*) FROM contacts"))
        db.close()
    counts = ("rows_created", "rows_updated", "rows_rejected", "rows_done")
    result = {
        "bench": "import",
        "rows": args.rows,
        "file_bytes": len(data),
        "seconds": round(seconds, 2),
        "rows_per_s": round(args.rows / seconds),
        "peak_rss_mb": rss,
        "rows_stored": stored,
        "rows_rejected": first["rows_rejected"],
        "planted_invalid": planted_invalid,
        "duplicates_merged": first["rows_updated"],
        "planted_duplicates": planted_duplicates,
        "crash": {
            "first_attempt_status": crashed.status_code,
            "rows_done_at_crash": midway["rows_done"],
            "rows_stored": stored_after_crash,
            "same_counts": {k: first[k] for k in counts} == {k: second[k] for k in counts}
            and stored == stored_after_crash,
        },
        "targets": TARGETS,
    }
    result["ok"] = (
        result["rows_per_s"] >= TARGETS["rows_per_s"]
        and rss <= TARGETS["peak_rss_mb"]
        and first["rows_rejected"] == planted_invalid
        and first["rows_updated"] == planted_duplicates
        and stored == args.rows - planted_invalid - planted_duplicates
        and crashed.status_code == 503
        and 0 < midway["rows_done"] < args.rows
        and result["crash"]["same_counts"]
    )
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
