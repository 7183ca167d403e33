"""Prospect and deal imports as durable jobs: the file goes to GCS first, then a Cloud Tasks
job reads it record by record and writes it in batches.

1. ``create``: an admin declares the file (kind, format, name, size). Over
   ``MAX_IMPORT_BYTES`` it is refused (413) before a byte is sent; else a job row and a
   signed upload URL (PUT, its size capped by a signed header) under ``imports/<org>/<job>/``.
2. ``start``: once uploaded, the stored object's size is checked again from its metadata
   (413, and the object is deleted, if it is over), and the job goes on the import queue,
   named by the job (queued once however often ``start`` is called).
3. ``run_job`` (the data-lifecycle function): first the whole file is read without writing
   anything (encoding, header, structure): a file that cannot be read fails as a whole with
   one reason, and nothing of it is stored. Then records are validated and written in
   batches of ``BATCH``; each batch's rows, rejected records and checkpoint (records done
   and the counts) commit in one transaction, under the job row's lock. A crash at any
   record loses only the batch in flight: the retry resumes after the checkpoint, so the
   counts end as if nothing had happened; a re-run of a finished job changes nothing.
   Dedupe (``colony.imports.merge``) makes a re-import of the same people an update.
   An owner column (``Owner``, ``Contact owner``, ``Deal owner``…: a person's user id or
   address) sets the owner; one that is not an active person of the org rejects that record
   (``owner``: a per-row error, never a silent drop). When the job ends, every prospect and
   deal still without an owner is assigned by the org's rules (``flows.tenants.owners``).

The uploaded file is deleted once the job ends (it may hold people an erasure must reach);
the rejected records stay, as the error report (``error_report``: CSV, formula-safe).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from colony.contracts.imports import ImportCreate
from colony.contracts.lifecycle import ImportTask, LifecycleBody
from colony.errors import Conflict, NotFound, PayloadTooLarge, UpstreamError
from colony.flows.deps import FlowDeps
from colony.flows.tenants import owners
from colony.flows.tenants.import_progress import recent, view
from colony.imports import merge, rows
from colony.imports.reading import (
    FileRejected,
    Record,
    csv_header,
    detect_encoding,
    records,
)
from colony.imports.report import error_report as render_report
from colony.registry.functions import IMPORT_QUEUE, QUEUES
from colony.store import orgdata
from colony.store.tenants import imports, members

MAX_IMPORT_BYTES = 50 * 1024 * 1024  # 100,000 CRM rows are ~20 MB; 50 MiB leaves room
UPLOAD_TTL_SECONDS = 3600
BATCH = 5000


__all__ = ["create", "error_report", "recent", "run_job", "start", "status", "view"]


class ImportMoved(UpstreamError):
    """Another attempt of the same job advanced it meanwhile: retry from its checkpoint."""

    code = "import_moved"
    expected = True


def _too_large(size: int) -> PayloadTooLarge:
    return PayloadTooLarge(
        f"the file is {size:,} bytes; an import file may be at most {MAX_IMPORT_BYTES:,}"
        " bytes (100,000 records): split it"
    )


def create(
    deps: FlowDeps, org_id: str, declared: ImportCreate, requested_by: str
) -> dict[str, Any]:
    """Open a job for a file of ``declared.size_bytes``; its signed upload URL."""
    if declared.size_bytes > MAX_IMPORT_BYTES:
        raise _too_large(declared.size_bytes)
    job_id = str(uuid.uuid4())
    name = f"imports/{org_id}/{job_id}/upload.{declared.format}"
    with deps.db.transaction(org_id) as cur:
        if not orgdata.org_exists(cur, org_id):
            raise NotFound(f"org {org_id!r} does not exist")
        row = imports.create_job(
            cur,
            job_id=job_id,
            org_id=org_id,
            kind=declared.kind,
            format=declared.format,
            filename=declared.filename,
            object_name=name,
            declared_bytes=declared.size_bytes,
            requested_by=requested_by,
        )
    url, headers = deps.blobs.signed_upload(name, UPLOAD_TTL_SECONDS, MAX_IMPORT_BYTES)
    return {**view(row), "upload": {"method": "PUT", "url": url, "headers": headers}}


def _job(cur: Any, job_id: str) -> dict[str, Any]:
    row = imports.job(cur, job_id)
    if row is None:  # another org's job is invisible under its RLS scope: the same answer
        raise NotFound(f"import job {job_id!r} does not exist")
    return row


def start(deps: FlowDeps, org_id: str, job_id: str, *, schedule: bool = True) -> dict[str, Any]:
    """Queue the job once its file is uploaded (idempotent: a queued job stays queued).
    ``schedule=False`` (the local CLI, which runs the job itself) adds no task."""
    with deps.db.transaction(org_id) as cur:
        row = _job(cur, job_id)
    if row["status"] not in ("awaiting_upload", "queued"):
        return view(row)
    try:
        size = deps.blobs.size(row["object_name"])
    except NotFound:
        raise Conflict("the file has not been uploaded yet: PUT it to the upload URL") from None
    if size > MAX_IMPORT_BYTES:
        deps.blobs.delete(row["object_name"])
        with deps.db.transaction(org_id) as cur:
            imports.fail_job(cur, job_id, str(_too_large(size)))
        raise _too_large(size)
    with deps.db.transaction(org_id) as cur:
        imports.queue_job(cur, job_id, size)
        row = _job(cur, job_id)
    if not schedule:
        return view(row)
    body = LifecycleBody(task=ImportTask(org_id=org_id, job_id=job_id)).model_dump(mode="json")

    deps.transport.schedule(
        IMPORT_QUEUE,
        QUEUES[IMPORT_QUEUE].target,
        json.dumps(body).encode(),
        task_id=f"import-{job_id}",
    )
    return view(row)


def status(deps: FlowDeps, org_id: str, job_id: str) -> dict[str, Any]:
    with deps.db.transaction(org_id) as cur:
        return view(_job(cur, job_id))


def error_report(deps: FlowDeps, org_id: str, job_id: str) -> str:
    """Every rejected record of the job as CSV (row, line, field, reason, value)."""
    with deps.db.transaction(org_id) as cur:
        _job(cur, job_id)
        return render_report(imports.errors(cur, job_id))


def _fail(deps: FlowDeps, org_id: str, row: dict[str, Any], reason: str) -> dict[str, Any]:
    with deps.db.transaction(org_id) as cur:
        imports.fail_job(cur, row["id"], reason)
        failed = _job(cur, row["id"])
    deps.blobs.delete(row["object_name"])
    return view(failed)


def _scan(data: bytes, row: dict[str, Any]) -> tuple[str, dict[str, str] | None, int]:
    """Read the whole file without writing: its encoding, its column map (CSV) and how
    many records it holds; ``FileRejected`` if it cannot be imported at all."""
    encoding = detect_encoding(data)
    columns = None
    if row["format"] == "csv":
        columns = rows.column_map(csv_header(data, encoding), row["kind"])
        if not columns:
            expected = "Email, Name, Company" if row["kind"] == "prospects" else "Deal Name, Stage"
            raise FileRejected(f"no column this import understands (expected e.g. {expected})")
    total = sum(1 for _ in records(data, row["format"], encoding))
    return encoding, columns, total


def run_job(deps: FlowDeps, org_id: str, job_id: str) -> dict[str, Any]:
    """Run (or resume) the job to its end; a finished job is returned as it is."""
    with deps.db.transaction(org_id) as cur:
        row = _job(cur, job_id)
    if row["status"] in ("completed", "failed", "awaiting_upload"):
        return view(row)
    try:
        data = deps.blobs.get(row["object_name"])
    except NotFound:
        return _fail(deps, org_id, row, "the uploaded file is gone; upload it again")
    if len(data) > MAX_IMPORT_BYTES:
        return _fail(deps, org_id, row, str(_too_large(len(data))))
    digest = hashlib.sha256(data).hexdigest()
    if row["content_sha256"] not in (None, digest):
        # a resume must read the bytes the first attempt read (records are skipped by number)
        return _fail(
            deps, org_id, row, "the file changed after the import started; start a new one"
        )
    try:
        encoding, columns, total = _scan(data, row)
    except FileRejected as error:
        return _fail(deps, org_id, row, str(error))
    with deps.db.transaction(org_id) as cur:
        imports.start_job(cur, job_id, encoding, total, digest)
    done = int(row["rows_done"])
    batch: list[Record] = []
    for record in records(data, row["format"], encoding):
        if record.number <= done:
            continue  # written before the crash this attempt resumes from
        batch.append(record)
        if len(batch) >= BATCH:
            done = _write(deps, org_id, row, columns, batch, done)
            batch = []
            if done >= total // 2:
                deps.faults.check("import.mid_file", job_id)  # crash-and-resume tests
    if batch:
        done = _write(deps, org_id, row, columns, batch, done)
    with deps.db.transaction(org_id) as cur:
        imports.finish_job(cur, job_id)
        finished = _job(cur, job_id)
    deps.blobs.delete(row["object_name"])
    owners.assign_unowned(deps, org_id, f"import:{job_id}")
    return view(finished)


Rejected = tuple[int, int, str | None, str, str | None]


def _validate(
    kind: str, columns: dict[str, str] | None, batch: Sequence[Record]
) -> tuple[list[Any], list[Rejected]]:
    valid: list[Any] = []
    rejected: list[Rejected] = []
    parse = rows.prospect if kind == "prospects" else rows.deal
    for record in batch:
        if record.problem is not None:
            rejected.append((record.number, record.line, None, record.problem, None))
            continue
        try:
            record_columns = columns or rows.column_map(list(record.cells), kind)
        except FileRejected as error:  # a JSON line naming one field twice
            rejected.append((record.number, record.line, None, str(error), None))
            continue
        result = parse(record.cells, record_columns)
        if isinstance(result, rows.Rejection):
            rejected.append((record.number, record.line, result.field, result.reason, result.value))
        else:
            valid.append(result)
    return valid, rejected


def _write(
    deps: FlowDeps,
    org_id: str,
    row: dict[str, Any],
    columns: dict[str, str] | None,
    batch: Sequence[Record],
    done: int,
) -> int:
    """Write one batch with its checkpoint; the records done after it."""
    valid, rejected = _validate(row["kind"], columns, batch)
    with deps.db.transaction(org_id) as cur:
        locked = imports.lock_job(cur, row["id"])
        if locked is None or int(locked["rows_done"]) != done:
            raise ImportMoved(f"import job {row['id']!r} moved on in another attempt")
        imports.lock_org_imports(cur, org_id)
        valid = _owned(cur, batch, valid, rejected)
        plan = (
            _plan_prospects(cur, valid) if row["kind"] == "prospects" else _plan_deals(cur, valid)
        )
        if row["kind"] == "prospects":
            imports.insert_contacts(cur, org_id, list(plan.inserts.values()))
            imports.update_contacts(cur, list(plan.updates.values()))
        else:
            imports.insert_deals(cur, org_id, list(plan.inserts.values()))
            imports.update_deals(cur, list(plan.updates.values()))
        imports.record_errors(cur, org_id, row["id"], rejected)
        after = batch[-1].number
        imports.checkpoint(cur, row["id"], done, after, (plan.created, plan.updated, len(rejected)))
    return after


def _owned(
    cur: Any, batch: Sequence[Record], valid: list[Any], rejected: list[Rejected]
) -> list[Any]:
    """Each record's owner as one of the org's active people (named by user id or address,
    any case); a record naming anyone else is moved to ``rejected`` with the reason."""
    if not any(record.owner_id for record in valid):
        return valid
    people: dict[str, str] = {}
    for person in members.active(cur):
        people[person.user_id.casefold()] = person.user_id
        if person.email:
            people[person.email.casefold()] = person.user_id
    # records and their parsed rows are in step: _validate keeps the order, skipping rejects
    refused = {x[0] for x in rejected}
    by_record = [r for r in batch if r.number not in refused]
    kept = []
    for record, parsed in zip(by_record, valid, strict=True):
        owner = parsed.owner_id
        if owner is None:
            kept.append(parsed)
        elif owner.casefold() in people:
            kept.append(replace(parsed, owner_id=people[owner.casefold()]))
        else:
            reason = "not an active person of this organisation (a user id or their address)"
            rejected.append((record.number, record.line, "owner", reason, owner[:200]))
    return kept


def _plan_prospects(cur: Any, valid: list[rows.Prospect]) -> merge.Plan:
    keys = [merge.prospect_keys(p) for p in valid]
    existing = imports.match_contacts(
        cur,
        [k["external_id"] for k in keys if k["external_id"]],
        [k["email"] for k in keys if k["email"]],
        [k["name_domain"] for k in keys if k["name_domain"]],
    )
    return merge.plan_prospects(valid, existing)


def _plan_deals(cur: Any, valid: list[rows.Deal]) -> merge.Plan:
    existing = imports.match_deals(
        cur, [d.external_id for d in valid if d.external_id], [d.name.lower() for d in valid]
    )
    emails = sorted({d.contact_email.lower() for d in valid if d.contact_email})
    return merge.plan_deals(valid, existing, imports.contacts_by_email(cur, emails))
