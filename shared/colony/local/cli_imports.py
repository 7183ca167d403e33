"""``colony import file|status|errors``: prospect and deal imports for the operator.

``file`` runs the same path the admin API opens (``flows.tenants.imports``): the file is declared
(its size checked), stored in the assets bucket under ``imports/<org>/<job>/``, checked
again, and the job run here, to its end, printing its counts (re-run ``colony import
status`` to watch a job the queue runs). ``errors`` prints a job's error report (CSV,
formula-safe)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from colony.settings import Settings


def _deps(settings: Settings) -> Any:
    from colony.adapters.storage import blob_store_from_settings
    from colony.local.db import connect_factory
    from colony.runtime.deps import build_deps
    from colony.store import Database

    db = Database(connect_factory(settings, "app"))
    return build_deps(settings, db=db, blobs=blob_store_from_settings(settings))


def _print(value: Any) -> None:
    print(json.dumps(value, indent=2, sort_keys=True, default=str), flush=True)


def cmd_import_file(settings: Settings, args: argparse.Namespace) -> int:
    from colony.contracts.imports import ImportCreate
    from colony.flows.tenants import imports

    path = Path(args.path)
    fmt = args.format or ("jsonl" if path.suffix.lower() in (".jsonl", ".ndjson") else "csv")
    size = path.stat().st_size
    fields = {"kind": args.kind, "format": fmt, "filename": path.name[:200], "size_bytes": size}
    declared = ImportCreate.model_validate(fields)
    deps = _deps(settings)
    try:
        job = imports.create(deps, args.org_id, declared, args.requested_by)
        name = f"imports/{args.org_id}/{job['id']}/upload.{fmt}"
        deps.blobs.put(name, path.read_bytes(), "application/octet-stream")
        imports.start(deps, args.org_id, job["id"], schedule=False)
        done = imports.run_job(deps, args.org_id, job["id"])
    finally:
        deps.db.close()
    _print(done)
    return 0 if done["status"] == "completed" else 1


def cmd_import_status(settings: Settings, args: argparse.Namespace) -> int:
    from colony.flows.tenants import imports

    deps = _deps(settings)
    try:
        if args.job_id:
            _print(imports.status(deps, args.org_id, args.job_id))
        else:
            _print(imports.recent(deps, args.org_id))
    finally:
        deps.db.close()
    return 0


def cmd_import_errors(settings: Settings, args: argparse.Namespace) -> int:
    from colony.flows.tenants import imports

    deps = _deps(settings)
    try:
        print(imports.error_report(deps, args.org_id, args.job_id), end="", flush=True)
    finally:
        deps.db.close()
    return 0


def add_commands(sub: Any) -> None:
    """Register ``colony import file|status|errors``."""
    group = sub.add_parser("import", help="prospect and deal imports").add_subparsers(
        dest="imports", required=True
    )
    run = group.add_parser("file", help="import a CSV or JSON-lines file, to its end")
    run.add_argument("org_id")
    run.add_argument("path")
    run.add_argument("--kind", choices=("prospects", "deals"), default="prospects")
    run.add_argument("--format", choices=("csv", "jsonl"), help="default: by the extension")
    run.add_argument("--requested-by", default="cli", help="who asked (kept on the job)")
    run.set_defaults(run=cmd_import_file)
    status = group.add_parser("status", help="an org's recent import jobs, or one")
    status.add_argument("org_id")
    status.add_argument("job_id", nargs="?")
    status.set_defaults(run=cmd_import_status)
    errors = group.add_parser("errors", help="a job's error report (CSV)")
    errors.add_argument("org_id")
    errors.add_argument("job_id")
    errors.set_defaults(run=cmd_import_errors)
