"""The admin API's import routes (``colony.admin.api`` authorises the caller first):

- ``POST /orgs/{org}/imports`` (``ImportCreate``: kind, format, filename, size_bytes) → 201
  the job and its signed upload (``{"method": "PUT", "url", "headers"}``); a declared size
  over the limit is a 413 before anything is stored;
- ``POST /orgs/{org}/imports/{job}/start`` → 202: the uploaded file is checked (its size
  again: 413) and the job queued (``flows.tenants.imports.start``); 409 if nothing was uploaded;
- ``GET /orgs/{org}/imports`` → the recent jobs; ``GET /orgs/{org}/imports/{job}`` → one;
- ``GET /orgs/{org}/imports/{job}/errors.csv`` → the error report (``text/csv``,
  formula-safe), one line per rejected record.

Another org's job is a 404, as if it did not exist (RLS cannot see it).
"""

from __future__ import annotations

import re
from typing import Any

import flask

from colony.contracts.imports import ImportCreate
from colony.errors import NotFound, Unprocessable, ValidationFailed
from colony.flows.tenants import imports
from colony.runtime.auth import Principal
from colony.runtime.deps import Deps
from colony.runtime.edge import JsonRequest
from colony.runtime.edge.responses import MethodNotAllowed

_ID = r"[A-Za-z0-9_.:-]{1,128}"
IMPORTS = re.compile(
    rf"^/orgs/(?P<org>{_ID})/imports(?:/(?P<job>{_ID}))?(?:/(?P<what>start|errors\.csv))?$"
)


def _method(request: JsonRequest, *allowed: str) -> None:
    if request.method not in allowed:
        raise MethodNotAllowed("this method is not allowed here", allow=allowed)


def handle(
    deps: Deps, request: JsonRequest, principal: Principal, org: str, job: str | None, what: str
) -> Any:
    """One import route for an authorised admin of ``org``."""
    if job is None:
        if what:
            raise NotFound("there is nothing at this path")
        _method(request, "GET", "POST")
        if request.method == "GET":
            return {"imports": imports.recent(deps, org)}
        try:
            declared = request.parse(ImportCreate)
        except ValidationFailed as error:
            raise Unprocessable(str(error)) from None
        return imports.create(deps, org, declared, principal.user_id), 201
    if what == "start":
        _method(request, "POST")
        return imports.start(deps, org, job), 202
    _method(request, "GET")
    if what == "errors.csv":
        report = imports.error_report(deps, org, job)
        return flask.Response(
            report,
            mimetype="text/csv",
            headers={
                "Content-Disposition": f'attachment; filename="import-{job}-errors.csv"',
                "X-Content-Type-Options": "nosniff",
            },
        )
    return imports.status(deps, org, job)
